
// v0: float32 = scalar0
// v1: float32 = input0
// v2: float32 = mul(v0, v1) as (float32,float32)
// v3: float32 = scalar1
// v4: float32 = add(v2, v3) as (float32,float32)
// return v4
// plan: ('vector', 4, 'int', 2, ('c', 'c'))
extern "C" __global__ void gt_fused_f64d804897f874af(
    const float* __restrict__ in0,
    float* __restrict__ out0,
    double s0,
    double s1,
    int n,
    int inner) {
  const int tid = (int)blockIdx.x * blockDim.x + threadIdx.x;
  const int stride = (int)blockDim.x * gridDim.x;
  const int nvec = n / 4;
  for (int v = tid; v < nvec; v += stride) {
    const int base = v * 4;
    float a0[4];
    gt_load<float, 4>(in0 + base, a0);
    float r0[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const double t0 = s0;
      const float t1 = a0[k];
      const float t2 = (((float)(t0)) * t1);
      const double t3 = s1;
      const float t4 = (t2 + ((float)(t3)));
      r0[k] = t4;
    }
    gt_store<float, 4>(out0 + base, r0);
  }
  for (int i = nvec * 4 + tid; i < n; i += stride) {
    const double t0 = s0;
    const float t1 = in0[i];
    const float t2 = (((float)(t0)) * t1);
    const double t3 = s1;
    const float t4 = (t2 + ((float)(t3)));
    out0[i] = t4;
  }
}
