
// v0: float32 = scalar0
// v1: float16 = input0
// v2: float16 = mul(v0, v1) as (float16,float16)
// v3: float32 = scalar1
// v4: float16 = add(v2, v3) as (float16,float16)
// v5: float16 = gelu(v4) [none] as (float16)
// return v5
// plan: ('strided', 1, 'int', 2, ('s', 'c'))
extern "C" __global__ void gt_fused_539ff170dbf225bd(
    const gt_half* __restrict__ in0,
    gt_half* __restrict__ out0,
    double s0,
    double s1,
    int n,
    int size0,
    int size1,
    int st_in0_0,
    int st_in0_1) {
  const int tid = (int)blockIdx.x * blockDim.x + threadIdx.x;
  const int stride = (int)blockDim.x * gridDim.x;
  for (int i = tid; i < n; i += stride) {
    int rem = i;
    int o_in0 = 0;
    { const int c = rem % size1; rem /= size1;
      o_in0 += c * st_in0_1;
    }
    { const int c = rem;
      o_in0 += c * st_in0_0;
    }
    const double t0 = s0;
    const float t1 = gt_to_float(in0[o_in0]);
    const float t2 = (((float)(t0)) * t1);
    const double t3 = s1;
    const float t4 = (t2 + ((float)(t3)));
    const float t5 = gt_gelu(t4);
    out0[i] = gt_from_float<gt_half>(t5);
  }
}
