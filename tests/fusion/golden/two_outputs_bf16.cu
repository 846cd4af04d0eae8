
// v0: bfloat16 = input0
// v1: float32 = input1
// v2: float32 = add(v0, v1) as (float32,float32)
// v3: float32 = sigmoid(v2) as (float32)
// v4: int64 = const 0
// v5: bool = gt(v2, v4) as (float32,float32)
// return v3, v5
// plan: ('vector', 16, 'int', 2, ('c', 'row', 'c', 'c'))
extern "C" __global__ void gt_fused_1b212f85ed602e71(
    const gt_bf16* __restrict__ in0,
    const float* __restrict__ in1,
    gt_bf16* __restrict__ out0,
    bool* __restrict__ out1,
    int n,
    int inner) {
  const int tid = (int)blockIdx.x * blockDim.x + threadIdx.x;
  const int stride = (int)blockDim.x * gridDim.x;
  const int nvec = n / 16;
  for (int v = tid; v < nvec; v += stride) {
    const int base = v * 16;
    const int col = base % inner, row = base / inner;
    gt_bf16 a0[16];
    gt_load<gt_bf16, 16>(in0 + base, a0);
    float a1[16];
    gt_load<float, 16>(in1 + col, a1);
    gt_bf16 r0[16];
    bool r1[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) {
      const float t0 = gt_to_float(a0[k]);
      const float t1 = a1[k];
      const float t2 = (t0 + t1);
      const float t3 = gt_sigmoid(t2);
      const long long t4 = (0LL);
      const bool t5 = (t2 > ((float)(t4)));
      r0[k] = gt_from_float<gt_bf16>(t3);
      r1[k] = t5;
    }
    gt_store<gt_bf16, 16>(out0 + base, r0);
    gt_store<bool, 16>(out1 + base, r1);
  }
  for (int i = nvec * 16 + tid; i < n; i += stride) {
    const int col = i % inner, row = i / inner;
    const float t0 = gt_to_float(in0[i]);
    const float t1 = in1[col];
    const float t2 = (t0 + t1);
    const float t3 = gt_sigmoid(t2);
    const long long t4 = (0LL);
    const bool t5 = (t2 > ((float)(t4)));
    out0[i] = gt_from_float<gt_bf16>(t3);
    out1[i] = t5;
  }
}
