// A small torch.profiler trace written here, in the shapes Kineto writes, for the warm-up (warm-up.ts) to
// open between its snapshots: the profiler-trace reader (the JSON scanner, the span walk, the model it
// builds) is a path of its own that the snapshots do not warm. Cold, it ran a 50 MB trace ≈ 30 % slower
// than warm (Node, three reads in one process: 1.65, 1.17, 0.90 s). So this file has what real traces have:
// Kineto's multi-line events and one-line ones, "[memory]" events of both argument sets (with Addr and the
// totals, and the older ones without), cpu_op / python_function / user_annotation spans around them,
// spans written before and after the events inside them, fractional and large timestamps, args with nested
// arrays to skip, the backward pass (autograd::engine::evaluate_function, AccumulateGrad) and an optimizer
// step, a CPU device beside the GPU. Made here rather than fetched, so that warming up makes no request.

/** Steps of forward, backward and optimizer step; a few thousand events in all (≈ 1 MB). */
const STEPS = 12;
const LAYERS = 24;
/** Where the gradients, the optimizer's scratch and its state live (apart from the activations). */
const GRADS = 139_900_000_000_000;
const SCRATCH = 139_800_000_000_000;
const STATE = 139_700_000_000_000;

export function warmUpTrace(oldArgs = false): Uint8Array {
  const out: string[] = [];
  const pid = 4242;
  const tid = 4242;
  let ts = 5_590_677_567_805.544;
  let evIdx = 0;
  let allocated = 512 << 20;
  const reserved = 4 * 2 ** 30;
  let addr = 140_189_068_319_744;
  let kineto = true; // alternate Kineto's multi-line events with one-line ones
  const tick = (us: number) => {
    ts = Math.round((ts + us) * 1000) / 1000;
    return ts;
  };
  const span = (cat: string, name: string, start: number, end: number) => {
    const dur = Math.round((end - start) * 1000) / 1000;
    kineto = !kineto;
    out.push(
      kineto
        ? `  {\n    "ph": "X", "cat": "${cat}", "name": "${name}", "pid": ${pid}, "tid": ${tid},\n    "ts": ${start}, "dur": ${dur},\n    "args": {\n      "External id": ${evIdx},"Record function id": 0, "Input Dims": [[512, 1, 128], [], []], "Input type": ["float", "Scalar", ""], "Ev Idx": ${evIdx}\n    }\n  }`
        : `{"ph": "X", "cat": "${cat}", "name": "${name}", "pid": ${pid}, "tid": ${tid}, "ts": ${start}, "dur": ${dur}, "args": {}}`,
    );
  };
  const memory = (bytes: number, at: number, device = 0, where = addr) => {
    allocated += device === 0 ? bytes : 0;
    const args = oldArgs
      ? `"Device Type": ${device === 0 ? 1 : 0}, "Device Id": ${device === 0 ? 0 : -1}, "Bytes": ${bytes}, "Profiler Event Index": ${evIdx}`
      : `"Total Reserved": ${reserved}, "Total Allocated": ${allocated}, "Bytes": ${bytes}, "Addr": ${where}, "Device Id": ${device === 0 ? 0 : -1}, "Device Type": ${device === 0 ? 1 : 0}, "Ev Idx": ${evIdx}`;
    evIdx++;
    out.push(
      `  {\n    "ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",\n    "pid": ${pid}, "tid": ${tid},\n    "ts": ${at},\n    "args": {\n      ${args}\n    }\n  }`,
    );
  };
  for (let step = 1; step <= STEPS; step++) {
    const stepStart = tick(3.5);
    const live: [number, number][] = [];
    // forward: one op per layer under the module's Python frames; each keeps an activation
    const fwdStart = tick(1.25);
    for (let l = 0; l < LAYERS; l++) {
      const callStart = tick(2.5);
      const opStart = tick(0.75);
      const bytes = (1 + (l % 5)) << 20;
      memory(bytes, tick(0.5));
      live.push([addr, bytes]);
      addr += bytes;
      if (l % 7 === 3) memory(4096, tick(0.25), 1, 94_000_000 + l * 4096); // a CPU tensor
      const opEnd = tick(1.5);
      span("cpu_op", l % 2 ? "aten::addmm" : "aten::gelu", opStart, opEnd);
      span(
        "python_function",
        "/usr/lib/python3/site-packages/torch/nn/modules/module.py(1501): _call_impl",
        callStart,
        tick(0.5),
      );
    }
    span("python_function", "/home/user/proj/train.py(40): forward", fwdStart, tick(1));
    // backward: the autograd engine frees each activation and makes a gradient
    for (let l = LAYERS - 1; l >= 0; l--) {
      const nodeStart = tick(2);
      const [where, bytes] = live.pop() as [number, number];
      memory(-bytes, tick(0.5), 0, where);
      const gradStart = tick(0.5);
      memory(bytes, tick(0.5), 0, GRADS + l * 8 * 2 ** 20);
      span("cpu_op", "AccumulateGrad", gradStart, tick(0.75));
      span(
        "cpu_op",
        `autograd::engine::evaluate_function: ${l % 2 ? "AddmmBackward0" : "GeluBackward0"}`,
        nodeStart,
        tick(0.5),
      );
    }
    // the optimizer's step: a temporary made and freed inside it, and its state made once
    const optStart = tick(2);
    for (let l = 0; l < LAYERS; l += 4) {
      const opStart = tick(0.5);
      memory(1 << 20, tick(0.25), 0, SCRATCH);
      memory(-(1 << 20), tick(0.25), 0, SCRATCH);
      if (step === 1) memory(2 << 20, tick(0.25), 0, STATE + l * 2 ** 21);
      span("cpu_op", "aten::add_", opStart, tick(0.5));
    }
    span("user_annotation", "Optimizer.step#SGD.step", optStart, tick(1));
    // the gradients are freed (zero_grad) and the step ends
    for (let l = 0; l < LAYERS; l++) memory(-((1 + (l % 5)) << 20), tick(0.25), 0, GRADS + l * 8 * 2 ** 20);
    span("user_annotation", `ProfilerStep#${step}`, stepStart, tick(1));
  }
  const text = `{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {\n      "id": 0, "name": "NVIDIA A100-PCIE-40GB", "totalGlobalMem": 42346610688\n    }\n  ],\n  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},\n  "profile_memory": 1,\n  "with_stack": 1,\n  "traceEvents": [\n${out.join(",\n")}\n  ],\n  "traceName": "warm-up.pt.trace.json",\n  "baseTimeNanoseconds": 1763324225770000000\n}\n`;
  return new TextEncoder().encode(text);
}
