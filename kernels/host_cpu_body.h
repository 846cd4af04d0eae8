// Host kernels for the cpu device (and emulated cuda, which computes on host arrays): the
// body, included twice by host_cpu.cc, once for the baseline ISA and once under
// `#pragma GCC target("avx2")`. Every function does exactly the IEEE operations of the
// numpy code it replaces, in the same order, each rounded to T: vector lanes are
// independent and the build forbids contraction (-ffp-contract=off), so the vector width
// never changes a bit.

template <class T> struct Lanes8;
template <> struct Lanes8<float> {
  typedef float v __attribute__((vector_size(32)));
  typedef int mask __attribute__((vector_size(32)));
};
template <> struct Lanes8<double> {
  typedef double v __attribute__((vector_size(64)));
  typedef long mask __attribute__((vector_size(64)));
};

// ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), numpy's order, as two in-register
// shuffles: lane 0 of each step holds the left operand, as in the scalar expression.
template <class T> static inline T hsum8(typename Lanes8<T>::v r) {
  typedef typename Lanes8<T>::mask m;
  typename Lanes8<T>::v s1 = r + __builtin_shuffle(r, (m){1, 0, 3, 2, 5, 4, 7, 6});
  typename Lanes8<T>::v s2 = s1 + __builtin_shuffle(s1, (m){2, 3, 0, 1, 6, 7, 4, 5});
  return s2[0] + s2[4];
}

// K leaves of numpy's pairwise sum (8 <= n <= 128 each: eight running sums over the
// multiple-of-8 part, combined in a tree, then the tail added one by one), advanced in
// lockstep: numpy computes one leaf after another, each a chain of dependent adds, so
// interleaving independent leaves is where the speed comes from.
template <class T, int K>
static inline void pw_leaves(const T* const* a, const gt_idx* n, T* out) {
  typedef typename Lanes8<T>::v v8;
  v8 r[K];
  gt_idx end[K], common = n[0];
  for (int k = 0; k < K; k++) {
    __builtin_memcpy(&r[k], a[k], sizeof(v8));
    end[k] = n[k] - n[k] % 8;
    if (end[k] < common) common = end[k];
  }
  gt_idx i = 8;
  for (; i < common; i += 8)
    for (int k = 0; k < K; k++) {
      v8 x;
      __builtin_memcpy(&x, a[k] + i, sizeof x);
      r[k] += x;
    }
  for (int k = 0; k < K; k++) {
    gt_idx j = i;
    for (; j < end[k]; j += 8) {
      v8 x;
      __builtin_memcpy(&x, a[k] + j, sizeof x);
      r[k] += x;
    }
    T res = hsum8<T>(r[k]);
    for (; j < n[k]; j++) res += a[k][j];
    out[k] = res;
  }
}

static inline gt_idx pw_half(gt_idx n) {
  gt_idx n2 = n / 2;
  return n2 - n2 % 8;  // numpy: halves, kept a multiple of the unroll factor
}

// numpy's pairwise_sum(a, n): the same tree, so the same bits; a node whose two children,
// four grandchildren or eight great-grandchildren are leaves computes them together.
template <class T> static T pw_sum(const T* a, gt_idx n) {
  if (n < 8) {
    T res = 0;
    for (gt_idx i = 0; i < n; i++) res += a[i];
    return res;
  }
  if (n <= 128) {
    T o;
    pw_leaves<T, 1>(&a, &n, &o);
    return o;
  }
  gt_idx n2 = pw_half(n), nb = n - n2;  // n2 <= nb
  if (nb <= 128) {
    const T* p[2] = {a, a + n2};
    gt_idx len[2] = {n2, nb};
    T o[2];
    pw_leaves<T, 2>(p, len, o);
    return o[0] + o[1];
  }
  gt_idx a2 = pw_half(n2), b2 = pw_half(nb);
  if (n2 > 128 && n2 - a2 <= 128 && nb - b2 <= 128) {
    const T* p[4] = {a, a + a2, a + n2, a + n2 + b2};
    gt_idx len[4] = {a2, n2 - a2, b2, nb - b2};
    T o[4];
    pw_leaves<T, 4>(p, len, o);
    return (o[0] + o[1]) + (o[2] + o[3]);
  }
  if (a2 > 128) {  // eight leaves when each of the four grandchildren splits into two
    gt_idx q[4] = {a2, n2 - a2, b2, nb - b2}, len[8];
    const T* p[8];
    const T* at = a;
    bool leaves = true;
    for (int k = 0; k < 4; k++) {
      gt_idx h = pw_half(q[k]);
      leaves = leaves && q[k] - h <= 128;
      p[2 * k] = at, len[2 * k] = h;
      p[2 * k + 1] = at + h, len[2 * k + 1] = q[k] - h;
      at += q[k];
    }
    if (leaves) {
      T o[8];
      pw_leaves<T, 8>(p, len, o);
      return ((o[0] + o[1]) + (o[2] + o[3])) + ((o[4] + o[5]) + (o[6] + o[7]));
    }
  }
  T left = pw_sum(a, n2);
  return left + pw_sum(a + n2, nb);
}

// numpy's add.reduce over a contiguous array: the identity, plus the pairwise sum.
template <class T> static T full_sum(const T* a, gt_idx n) {
  T out = 0;
  return out + pw_sum(a, n);
}

#ifndef GT_HOST_SUM_ONLY
// np.maximum as numpy's vector loop computes it: a NaN `a` wins, else max_ps(a, b), which
// answers b when a is not greater (b NaN, or equal zeros of either sign).
template <class T> static inline T np_maximum(T a, T b) { return a != a ? a : (a > b ? a : b); }

static inline float sqrt_of(float x) { return __builtin_sqrtf(x); }
static inline double sqrt_of(double x) { return __builtin_sqrt(x); }


// optim/host_step.py's _eager (FUSED false: Adam's composition of in-place ops) or _fused
// (gt.fuse's evaluation of optim/fused.py's adam_step), one element at a time: each
// operation is one numpy ufunc there, with its operands in the same order. The flags are
// selects, not branches, so the loop vectorises (a select changes no value).
template <class T, bool FUSED, bool AMSGRAD>
static void adam_step(T* __restrict p, const T* __restrict g_in, T* __restrict m,
                      T* __restrict v, T* __restrict vmax, gt_idx n, const AdamScalars* s,
                      int flags) {
  const T decay = (T)s->decay, wd = (T)s->wd, w1 = (T)s->w1, b2 = (T)s->beta2,
          bc = (T)s->bc2_sqrt, eps = (T)s->eps, step = (T)s->step;
  // fused: the traced `1 - scalar` terms round in T; eager: Python's double, then cast
  const T keep1 = (T)1 - w1, w2 = FUSED ? (T)1 - b2 : (T)s->w2;
  const bool decayed = (flags & ADAM_WD) && (flags & ADAM_DECOUPLED),
             wd_grad = (flags & ADAM_WD) && !(flags & ADAM_DECOUPLED),
             maximize = flags & ADAM_MAXIMIZE, lerp = !FUSED || (flags & ADAM_LERP);
  for (gt_idx i = 0; i < n; i++) {
    T g = maximize ? -g_in[i] : g_in[i];
    T pi = decayed ? p[i] * decay : p[i];
    g = wd_grad ? g + p[i] * wd : g;
    T mo = m[i];
    T t0 = g - mo;  // eager: m.lerp_(g, w1) = m + w1 * (g - m)
    // fused: w1 < 0.5: m + (g - m) * w1, else g - (g - m) * (1 - w1)
    T mi = !FUSED ? mo + w1 * t0 : (lerp ? mo + t0 * w1 : g - t0 * keep1);
    m[i] = mi;
    T t1 = v[i] * b2;  // v * beta2 + g * g * (1 - beta2)
    t0 = g * g;
    t0 = t0 * w2;
    T vi = t1 + t0;
    v[i] = vi;
    T src = vi;
    if (AMSGRAD) src = vmax[i] = np_maximum(vmax[i], vi);
    t1 = sqrt_of(src);  // denom = sqrt(v) / bc2_sqrt + eps
    t1 = t1 / bc;
    t1 = t1 + eps;
    t0 = mi / t1;
    p[i] = FUSED ? pi - t0 * step : pi + t0 * step;  // eager: step is -step_size
  }
}

template <class T, bool FUSED>
static void adam(T* p, const T* g, T* m, T* v, T* vmax, gt_idx n, const AdamScalars* s,
                 int flags) {
  if (flags & ADAM_AMSGRAD)
    adam_step<T, FUSED, true>(p, g, m, v, vmax, n, s, flags);
  else
    adam_step<T, FUSED, false>(p, g, m, v, vmax, n, s, flags);
}
#endif  // GT_HOST_SUM_ONLY
