
// v0: bool = input0
// v1: float64 = input1
// v2: float64 = tanh(v1) as (float64)
// v3: float32 = input2
// v4: float32 = const 0.5
// v5: float32 = mul(v3, v4) as (float32,float32)
// v6: float64 = where(v0, v2, v5) as (bool,float64,float64)
// return v6
// plan: ('vector', 8, 'int', 2, ('c', 'c', 'c', 'c'))
extern "C" __global__ void gt_fused_5e9240804738e074(
    const bool* __restrict__ in0,
    const double* __restrict__ in1,
    const float* __restrict__ in2,
    double* __restrict__ out0,
    int n,
    int inner) {
  const int tid = (int)blockIdx.x * blockDim.x + threadIdx.x;
  const int stride = (int)blockDim.x * gridDim.x;
  const int nvec = n / 8;
  for (int v = tid; v < nvec; v += stride) {
    const int base = v * 8;
    bool a0[8];
    gt_load<bool, 8>(in0 + base, a0);
    double a1[8];
    gt_load<double, 8>(in1 + base, a1);
    float a2[8];
    gt_load<float, 8>(in2 + base, a2);
    double r0[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const bool t0 = a0[k];
      const double t1 = a1[k];
      const double t2 = gt_tanh(t1);
      const float t3 = a2[k];
      const double t4 = 0.5;
      const float t5 = (t3 * ((float)(t4)));
      const double t6 = (t0 ? t2 : ((double)(t5)));
      r0[k] = t6;
    }
    gt_store<double, 8>(out0 + base, r0);
  }
  for (int i = nvec * 8 + tid; i < n; i += stride) {
    const bool t0 = in0[i];
    const double t1 = in1[i];
    const double t2 = gt_tanh(t1);
    const float t3 = in2[i];
    const double t4 = 0.5;
    const float t5 = (t3 * ((float)(t4)));
    const double t6 = (t0 ? t2 : ((double)(t5)));
    out0[i] = t6;
  }
}
