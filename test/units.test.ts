// Byte and count formatting (src/core/units.ts). formatCount avoids Intl for speed; Intl's own
// toLocaleString("en-US") is the independent reference it must equal.
import { describe, expect, it } from "vitest";
import { exactBytes, exactBytesShort, formatBytes, formatBytesSigned, formatCount } from "../src/core/units";

describe("units", () => {
  it("formatCount equals toLocaleString('en-US') for whole numbers of every length and sign", () => {
    const values = [
      0,
      1,
      9,
      10,
      999,
      1000,
      1001,
      65535,
      999_999,
      1_000_000,
      123_456_789,
      2 ** 40,
      2 ** 53 - 1,
    ];
    let x = 7;
    for (let i = 0; i < 200; i++) {
      x = (x * 48271) % 2147483647;
      values.push(x * (i % 7) + (i % 3));
    }
    for (const v of values) {
      expect(formatCount(v)).toBe(v.toLocaleString("en-US"));
      // -0 is "0" here (Intl writes "-0", which no byte count should show)
      expect(formatCount(-v)).toBe((v === 0 ? 0 : -v).toLocaleString("en-US"));
    }
    expect(formatCount(1234.6)).toBe("1,235");
    expect(formatCount(Number.NaN)).toBe("—");
  });

  it("exact and binary byte sizes", () => {
    expect(exactBytes(1048576)).toBe("1,048,576 bytes");
    expect(exactBytesShort(1048576)).toBe("1,048,576 B");
    expect(formatBytes(1536)).toBe("1.50 KiB");
    expect(formatBytes(3 * 2 ** 30)).toBe("3.00 GiB");
    expect(formatBytes(-2048)).toBe("−2.00 KiB");
    expect(formatBytesSigned(10 * 2 ** 20)).toBe("+10.00 MiB");
    expect(formatBytesSigned(0)).toBe("±0 B");
  });
});
