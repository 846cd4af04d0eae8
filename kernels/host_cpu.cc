// Host kernels for the cpu device: numpy's full float sum and the Adam step, bit for bit
// (see host_cpu_body.inc). gpu_tensor/backends/host_kernels.py builds this file with g++
// (-O3 -ffp-contract=off -fno-math-errno, no -ffast-math), loads it with ctypes and
// falls back to numpy when it cannot.

typedef long gt_idx;

// Scalars of an Adam step as Python computed them (doubles); numpy casts each to the
// array's dtype where it meets an array, and so does the kernel.
struct AdamScalars {
  double decay;      // 1 - lr * wd (decoupled weight decay)
  double wd;         // weight_decay (added to the gradient)
  double w1;         // 1 - beta1
  double beta2;      // beta2
  double w2;         // 1 - beta2
  double bc2_sqrt;   // sqrt(1 - beta2 ** step)
  double eps;        // eps
  double step;       // eager: -step_size; fused: step_size
};

enum { ADAM_WD = 1, ADAM_DECOUPLED = 2, ADAM_MAXIMIZE = 4, ADAM_AMSGRAD = 8, ADAM_LERP = 16 };

namespace gt_base {
#include "host_cpu_body.inc"
}

#pragma GCC push_options
#pragma GCC target("avx2")
namespace gt_avx2 {
#include "host_cpu_body.inc"
}
#pragma GCC pop_options

static bool detect_avx2() {
  __builtin_cpu_init();  // (this runs as a static initializer, maybe before libgcc's)
  return __builtin_cpu_supports("avx2");
}
static const bool has_avx2 = detect_avx2();

template <class T> static T sum(const T* a, long n) {
  return has_avx2 ? gt_avx2::full_sum(a, n) : gt_base::full_sum(a, n);
}

extern "C" {

// 1 when the vector path runs here (the pairwise sum is only faster than numpy with it).
int gt_host_avx2() { return has_avx2; }

float gt_sum_f32(const float* a, long n) { return sum(a, n); }
double gt_sum_f64(const double* a, long n) { return sum(a, n); }

#define GT_COMMA ,
#define GT_ADAM(name, fn, T)                                                               \
  void name(T* p, const T* g, T* m, T* v, T* vmax, long n, const void* s, int flags) {  \
    if (has_avx2)                                                                        \
      gt_avx2::fn(p, g, m, v, vmax, n, (const AdamScalars*)s, flags);                   \
    else                                                                                 \
      gt_base::fn(p, g, m, v, vmax, n, (const AdamScalars*)s, flags);                   \
  }
GT_ADAM(gt_adam_eager_f32, adam<float GT_COMMA false>, float)
GT_ADAM(gt_adam_eager_f64, adam<double GT_COMMA false>, double)
GT_ADAM(gt_adam_fused_f32, adam<float GT_COMMA true>, float)
GT_ADAM(gt_adam_fused_f64, adam<double GT_COMMA true>, double)
}
