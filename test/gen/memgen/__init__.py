"""memgen: fixture generator for peakscope (Python 3 standard library only).

Modules:
  allocator  - a faithful simulation of PyTorch's CUDA caching allocator (and torch_npu's variant)
  stacks     - realistic stacks (frames) per layout (cuda-all, cuda-python, npu) and install style
  layout     - renders the simulated state + trace as the dict `_snapshot()` returns, per torch version
  knownrun   - the known-composition run (3 x bf16 Linear(2048, 2048) + AdamW)
  workloads  - random / training-like workloads used by variants, random-trace and big
  variants   - the same content written every way a reader must handle
  hostile    - malicious and broken inputs
  bigpickle  - a streaming pickle writer for snapshots of 10 MB .. 1 GB+
"""
