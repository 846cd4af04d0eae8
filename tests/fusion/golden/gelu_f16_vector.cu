
// v0: float32 = scalar0
// v1: float16 = input0
// v2: float16 = mul(v0, v1) as (float16,float16)
// v3: float32 = scalar1
// v4: float16 = add(v2, v3) as (float16,float16)
// v5: float16 = gelu(v4) [none] as (float16)
// return v5
// plan: ('vector', 8, 'int', 2, ('c', 'c'))
extern "C" __global__ void gt_fused_933ac2bbbc63b269(
    const gt_half* __restrict__ in0,
    gt_half* __restrict__ out0,
    double s0,
    double s1,
    int n,
    int inner) {
  const int tid = (int)blockIdx.x * blockDim.x + threadIdx.x;
  const int stride = (int)blockDim.x * gridDim.x;
  const int nvec = n / 8;
  for (int v = tid; v < nvec; v += stride) {
    const int base = v * 8;
    gt_half a0[8];
    gt_load<gt_half, 8>(in0 + base, a0);
    gt_half r0[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const double t0 = s0;
      const float t1 = gt_to_float(a0[k]);
      const float t2 = (((float)(t0)) * t1);
      const double t3 = s1;
      const float t4 = (t2 + ((float)(t3)));
      const float t5 = gt_gelu(t4);
      r0[k] = gt_from_float<gt_half>(t5);
    }
    gt_store<gt_half, 8>(out0 + base, r0);
  }
  for (int i = nvec * 8 + tid; i < n; i += stride) {
    const double t0 = s0;
    const float t1 = gt_to_float(in0[i]);
    const float t2 = (((float)(t0)) * t1);
    const double t3 = s1;
    const float t4 = (t2 + ((float)(t3)));
    const float t5 = gt_gelu(t4);
    out0[i] = gt_from_float<gt_half>(t5);
  }
}
