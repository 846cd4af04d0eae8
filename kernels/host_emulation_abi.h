// host_emulation_abi.h -- what a kernel compiled under host_emulation.h and the launcher in
// host_emulation_runtime.cc agree on: the error codes, the launch state's name, and the
// signature of a kernel's exported entry (one call per (block, thread) of a launch).
#pragma once

#define GT_EMU_ERR_SYNC_IN_SERIAL 1  // __syncthreads called in a serial launch
#define GT_EMU_ERR_EXCEPTION 2       // a C++ exception escaped the kernel

namespace gt_emu {

struct Ctx;  // a launch's state, defined by the runtime (opaque to kernels)
using SyncFn = void (*)(Ctx*);
// entry(ctx, sync, dynamic_shared, grid3, block3, block, thread, args): 0, or an error code
using Entry = int (*)(Ctx*, SyncFn, void*, const unsigned*, const unsigned*, unsigned long long,
                      unsigned, void**);

}  // namespace gt_emu
