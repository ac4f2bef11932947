// Frame noise (issue 21 item 9): `PyType_*` and unnamed `??` frames are hidden wherever frames are shown,
// by one core filter — stack lists and tooltips (workers/stacks.ts), the call tree's labels, call sites.
// A hand-built model whose stack has those frames between real ones; expected values written here.

import { describe, expect, it } from "vitest";
import { attribute } from "../src/core/attribution";
import { isNoiseFrame } from "../src/core/attribution/frames";
import { ModelBuilder } from "../src/core/model/builder";
import { CallTreeBuilder, type CallTreeNode } from "../src/core/tree";
import { fullStack, stackView } from "../workers/stacks";

const b = new ModelBuilder();
const F = (file: string, line: number, name: string) => b.internFrame(file, line, name);
const noise = [
  F("??", 0, "PyType_GetModule"),
  F("??", 0, "??"),
  F("", 0, ""),
  F("/usr/src/python/Objects/call.c", 0, "_PyObject_MakeTpCall"),
];
// innermost first
const stack = b.internStack([
  F("??", 0, "torch::unwind::unwind()"),
  F("??", 0, "at::native::empty_cuda(c10::ArrayRef<long>)"),
  noise[1],
  F("python_torch_functions_0.cpp", 0, "torch::autograd::THPVariable_zeros(_object*, _object*, _object*)"),
  noise[0],
  noise[2],
  F("/usr/lib/python3.11/site-packages/torch/functional.py", 10, "zeros_wrap"),
  noise[0],
  noise[3],
  F("/home/u/proj/train.py", 5, "main"),
  noise[1],
]);
/** A model of one 2 MiB segment whose one live 1 KiB block has `stack`. */
function oneBlockModel(mb: ModelBuilder, stack: number, fileName: string) {
  mb.addSegment({
    device: 0,
    address: 0x10000,
    totalSizeBytes: 2 << 20,
    allocatedSizeBytes: 1024,
    activeSizeBytes: 1024,
  });
  mb.addBlock({ address: 0x10000, sizeBytes: 1024, state: "active_allocated", stack });
  mb.addBlock({ address: 0x10400, sizeBytes: (2 << 20) - 1024, state: "inactive" });
  return mb.finish({ fileName, byteLength: 0, format: "pickle", pickleProtocol: 4, notes: [] });
}
const model = oneBlockModel(b, stack, "noise.pickle");
const NOISE_TEXT = /PyType_|^\?\?$|_PyObject_MakeTpCall/;

describe("frame noise, one filter", () => {
  it("isNoiseFrame: PyType_*, unnamed ??, MemoryViz's list; a named frame in ?? is kept", () => {
    expect(isNoiseFrame("??", "PyType_GetModule")).toBe(true);
    expect(isNoiseFrame("??", "_PyType_Lookup")).toBe(true);
    expect(isNoiseFrame("??", "??")).toBe(true);
    expect(isNoiseFrame("", "")).toBe(true);
    expect(isNoiseFrame("??", "_PyEval_EvalFrameDefault")).toBe(true);
    expect(isNoiseFrame("/x/Objects/call.c", "_PyObject_MakeTpCall")).toBe(true);
    expect(isNoiseFrame("??", "torch::autograd::THPVariable_zeros(_object*)")).toBe(false);
    expect(isNoiseFrame("/home/u/proj/train.py", "main")).toBe(false);
    expect(isNoiseFrame("/home/u/proj/types.py", "PyTypeChecker")).toBe(false);
  });

  it("stack lists and tooltips (stackView) hide them and count them as hidden", () => {
    const v = stackView(model, stack);
    const names = v.frames.map((f) => f.name);
    expect(names.some((n) => NOISE_TEXT.test(n) || n === "")).toBe(false);
    expect(names).toContain("zeros_wrap");
    expect(names).toContain("main");
    // 11 frames: unwind (machinery) + the 6 noise frames hidden; at::, THPVariable, zeros_wrap, main shown
    expect(v.total).toBe(11);
    expect(v.hiddenNoise).toBe(7);
  });

  it("tooltips also hide CPython's own functions where their file is unsymbolised; the full stack keeps them", () => {
    const c = new ModelBuilder();
    const G = (file: string, name: string) => c.internFrame(file, 0, name);
    const s = c.internStack([
      G("??", "at::native::empty_cuda(c10::ArrayRef<long>)"),
      G("??", "method_vectorcall"),
      G("??", "slot_tp_call"),
      G("/usr/src/python/Objects/typeobject.c", "slot_tp_call"), // symbolised: its file says what it is
      G("??", "torch::autograd::THPVariable_zeros(_object*, _object*, _object*)"),
      G("/home/u/proj/train.py", "main"),
    ]);
    const m = oneBlockModel(c, s, "cpython.pickle");
    const v = stackView(m, s);
    expect(v.frames.map((f) => `${f.filename} ${f.name}`)).toEqual([
      "?? at::native::empty_cuda(c10::ArrayRef<long>)",
      "/usr/src/python/Objects/typeobject.c slot_tp_call",
      "?? torch::autograd::THPVariable_zeros(_object*, _object*, _object*)",
      "/home/u/proj/train.py main",
    ]);
    expect(v.hiddenNoise).toBe(2);
    expect(fullStack(m, s)).toHaveLength(6);
  });

  it("call tree labels and the call site never show them", () => {
    const a = attribute(model);
    const t = new CallTreeBuilder(model, a).build(null, "snapshot");
    const labels: string[] = [];
    const walk = (n: CallTreeNode) => {
      labels.push(n.name, n.detail ?? "", ...(n.collapsedFrames ?? []));
      n.children.forEach(walk);
    };
    walk(t.root);
    expect(labels.filter((l) => NOISE_TEXT.test(l))).toEqual([]);
    const main = t.root.children.find((c) => c.name === "train.py:5 main") as CallTreeNode;
    expect(main.bytes).toBe(1024);
    expect(main.children.map((c) => c.name)).toEqual(["torch · 2 frames"]);
    expect(main.children[0].collapsedFrames).toEqual([
      "functional.py:10 zeros_wrap",
      "torch::autograd::THPVariable_zeros",
    ]);
    const site = a.sites[a.blockSite[0]];
    expect(site.label).not.toMatch(NOISE_TEXT);
    expect(site.label).toContain("train.py:5");
  });
});
