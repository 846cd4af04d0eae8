// host_emulation_runtime.cc -- the launcher for kernels compiled under host_emulation.h.
//
// Compiled once into a library of its own (gpu_tensor/kernel/emulate.py caches it beside the
// kernels), so the std::thread/std::barrier code below is not compiled again for every
// kernel. A launch calls the kernel's exported entry once per (block, thread); the model,
// and why it is correct, is in host_emulation.h's header comment.
//
//   extern "C" int gt_emu_launch(Entry entry, const unsigned* grid3, const unsigned* block3,
//                                unsigned long long shared_bytes, void** args, int serial)
//   Returns 0, or a nonzero code (GT_EMU_ERR_* in host_emulation_abi.h) after the launch completes.

#include <atomic>
#include <barrier>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include "host_emulation_abi.h"

namespace gt_emu {

struct Ctx {
    std::barrier<>* barrier = nullptr;  // null in serial mode
    std::atomic<int> error{0};
};

static void sync(Ctx* c) {
    if (c->barrier == nullptr) {
        c->error.store(GT_EMU_ERR_SYNC_IN_SERIAL);
        return;
    }
    c->barrier->arrive_and_wait();
}

static std::mutex launch_mutex;

}  // namespace gt_emu

extern "C" int gt_emu_launch(gt_emu::Entry entry, const unsigned* g3, const unsigned* b3,
                             unsigned long long shared_bytes, void** args, int serial) {
    using namespace gt_emu;
    std::lock_guard<std::mutex> lock(launch_mutex);
    const unsigned long long nblocks = (unsigned long long)g3[0] * g3[1] * g3[2];
    const unsigned nthreads = b3[0] * b3[1] * b3[2];
    std::vector<std::max_align_t> shared((shared_bytes + sizeof(std::max_align_t) - 1) /
                                         sizeof(std::max_align_t));
    void* dynamic = shared.data();
    Ctx state;
    auto body = [&](unsigned long long blk, unsigned t) {
        const int code = entry(&state, sync, dynamic, g3, b3, blk, t, args);
        if (code != 0) state.error.store(code);
    };
    if (serial) {
        for (unsigned long long blk = 0; blk < nblocks; ++blk)
            for (unsigned t = 0; t < nthreads; ++t) body(blk, t);
        return state.error.load();
    }
    std::barrier<> barrier((std::ptrdiff_t)nthreads);
    state.barrier = &barrier;
    std::vector<std::thread> threads;
    threads.reserve(nthreads);
    for (unsigned t = 0; t < nthreads; ++t) {
        threads.emplace_back([&, t] {
            for (unsigned long long blk = 0; blk < nblocks; ++blk) {
                body(blk, t);
                barrier.arrive_and_wait();  // block boundary: nobody starts the next block early
            }
        });
    }
    for (auto& th : threads) th.join();
    return state.error.load();
}
