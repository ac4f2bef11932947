"""Pickles assembled opcode by opcode, for shapes pickle.dump never writes but a reader must get right."""

import struct


class Ops:
    """A protocol-4 opcode stream that memoises every str it writes once and refers to it after."""

    def __init__(self):
        self.out = bytearray(b"\x80\x04")
        self.slots = 0
        self.strs = {}

    def memoize(self):
        self.out += b"\x94"
        self.slots += 1
        return self.slots - 1

    def str(self, s):
        if s in self.strs:
            self.out += b"h" + bytes([self.strs[s]]) if self.strs[s] < 256 else b"j" + struct.pack("<I", self.strs[s])
            return
        b = s.encode()
        self.out += b"\x8c" + bytes([len(b)]) + b
        self.strs[s] = self.memoize()

    def int(self, n):
        self.out += b"J" + struct.pack("<i", n)

    def get(self, slot):
        self.out += b"h" + bytes([slot]) if slot < 256 else b"j" + struct.pack("<I", slot)

    def frame(self, name, line):
        """A new frame dict; returns its memo slot."""
        self.out += b"}"
        slot = self.memoize()
        self.out += b"("
        self.str("filename"); self.str("/work/train.py")
        self.str("line"); self.int(line)
        self.str("name"); self.str(name)
        self.out += b"u"
        return slot

    def entry(self, addr, frames):
        """A trace entry whose frames list is written by frames() (between MARK and APPENDS)."""
        self.out += b"}"
        self.memoize()
        self.out += b"("
        self.str("action"); self.str("alloc")
        self.str("addr"); self.int(addr)
        self.str("size"); self.int(512)
        self.str("stream"); self.int(0)
        self.str("time_us"); self.int(addr)
        self.str("frames")
        self.out += b"]"
        self.memoize()
        self.out += b"("
        frames()
        self.out += b"e"  # APPENDS
        self.out += b"u"  # SETITEMS


def _one_device_trace(o, entries):
    """{"segments": [], "device_traces": [[…]]}: entries() writes device 0's entries between its MARK and
    APPENDS."""
    o.out += b"}"
    o.memoize()
    o.out += b"("
    o.str("segments")
    o.out += b"]"
    o.memoize()
    o.str("device_traces")
    o.out += b"]"
    o.memoize()
    o.out += b"("
    o.out += b"]"  # device 0
    o.memoize()
    o.out += b"("
    entries()
    o.out += b"e"  # APPENDS (device 0's entries)
    o.out += b"e"  # APPENDS (device_traces)
    o.out += b"u"  # SETITEMS (top dict)
    o.out += b"."
    return bytes(o.out)


def _two_frames(o, inner):
    """(first, again): frames() callbacks for Ops.entry that write the frames inner and outer anew, then
    refer to them."""
    slots = {}

    def first():
        slots["f1"] = o.frame(inner, 10)
        slots["f2"] = o.frame("outer", 20)

    def again():
        o.get(slots["f1"])
        o.get(slots["f2"])

    return first, again, slots


def memo_overwrite():
    """Four entries on device 0. The first writes frames f1, f2 anew; the next two refer to them
    (identical bytes); then a PUT puts another frame dict in f1's slot, and the fourth entry's bytes
    are again identical to the second's, but mean the new frame."""
    o = Ops()
    first, again, slots = _two_frames(o, "first_inner")

    def entries():
        o.entry(4096, first)
        o.entry(8192, again)
        o.entry(12288, again)
        # another frame dict, stored over f1's slot by BINPUT, then popped off the stack
        o.out += b"}("
        o.str("filename"); o.str("/work/other.py")
        o.str("line"); o.int(99)
        o.str("name"); o.str("replaced_inner")
        o.out += b"u"
        o.out += b"q" + bytes([slots["f1"]]) + b"0"  # BINPUT f1, POP
        o.entry(16384, again)

    return _one_device_trace(o, entries)


def key_overwrite():
    """Five entries on device 0, then a PUT puts the str "device_free" in the memo slot that held the key
    "size", and five more entries whose bytes are the earlier ones' but whose size is now a device_free."""
    o = Ops()
    first, again, _ = _two_frames(o, "inner")

    def entries():
        o.entry(4096, first)
        for i in range(4):
            o.entry(8192 + 4096 * i, again)
        # the str "device_free", stored over the slot of the key "size" by BINPUT, then popped off the stack
        b = b"device_free"
        o.out += b"\x8c" + bytes([len(b)]) + b
        o.out += b"q" + bytes([o.strs["size"]]) + b"0"  # BINPUT, POP
        for i in range(5):
            o.entry(65536 + 4096 * i, again)

    return _one_device_trace(o, entries)
