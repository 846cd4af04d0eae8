"""The kernel layer: CUDA C sources in kernels/ and everything that plans, compiles and runs
them. Importing this package imports nothing heavy; cupy only loads when a kernel is compiled
for or launched on a real GPU.

- sources   where kernels/ and the CUDA headers are
- nvrtc     driverless NVRTC (compile_ptx / compile_program)
- compile   get_function (compile + memory/disk cache + load)
- emulate   run a .cu source on the CPU under kernels/host_emulation.h (g++)
- variants  every kernel instantiation the copy planner can ask for
- copy_plan the copy planner (pure)
- copy_launch a copy plan's launch shape and packed arguments (LaunchSpec), and its launch
- copy      strided_copy, the one copy executor; its launch step is CudaLauncher (cupy
            arrays: GPU or simulator) or HostLauncher (numpy arrays, host emulation)
"""

__all__: list[str] = []
