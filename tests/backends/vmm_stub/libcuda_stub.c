/* libcuda_stub.c -- a stand-in libcuda.so.1 for checking cuda_vmm against the real
 * cuda-bindings package without a GPU (tests/backends/test_cuda_vmm_bindings.py).
 *
 * cuda-bindings resolves every driver entry point through cuGetProcAddress; this library
 * answers with its own functions (two devices, peer access both ways), keeps the state a
 * driver would (reservations, physical handles, mappings, access per mapping) and writes
 * one line per call, with the arguments as the bindings marshalled them, to the file
 * named by $GT_STUB_LOG. Misuse the real driver rejects returns CUDA_ERROR_INVALID_VALUE
 * (and is logged): a map that is not one whole handle at offset 0, an unmap that is not
 * exactly one mapping, a release of a handle still mapped. $GT_STUB_RDMA answers
 * CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, one digit per device
 * (default 1).
 *
 * gt_stub_fill / gt_stub_read stand in for cudaMemset / cudaMemcpy on device 0 (a mapping
 * device 0 has no access to faults), so cuda_vmm.self_test runs against it.
 * Build: gcc -shared -fPIC -I<dir of cuda.h> -o libcuda.so.1 libcuda_stub.c -ldl
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NDEV 2
#define SLOTS 256

typedef struct { unsigned long long id; size_t size; unsigned char *bytes; int maps; } Handle;
typedef struct { CUdeviceptr at; size_t size; Handle *h; unsigned access; } Mapping;

static Handle handles[SLOTS];
static Mapping mappings[SLOTS];
static unsigned long long next_handle = 1;
static CUdeviceptr next_va = 0x700000000000ull;

static void note(const char *fmt, ...) {
    const char *path = getenv("GT_STUB_LOG");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

static CUresult refuse(const char *why) { note("VIOLATION %s", why); return CUDA_ERROR_INVALID_VALUE; }

static Handle *find_handle(unsigned long long id) {
    for (int i = 0; i < SLOTS; i++) if (handles[i].id == id && handles[i].bytes) return &handles[i];
    return NULL;
}

static Mapping *mapping_at(CUdeviceptr p) {  /* the mapping containing address p */
    for (int i = 0; i < SLOTS; i++)
        if (mappings[i].h && p >= mappings[i].at && p < mappings[i].at + mappings[i].size) return &mappings[i];
    return NULL;
}

CUresult cuDriverGetVersion(int *v) { *v = 12090; return CUDA_SUCCESS; }
CUresult cuInit(unsigned int flags) { note("cuInit flags=%u", flags); return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int *n) { *n = NDEV; return CUDA_SUCCESS; }

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (ordinal < 0 || ordinal >= NDEV) return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice dev) {
    const char *rdma = getenv("GT_STUB_RDMA");  /* one digit per device, e.g. "10" */
    if (attr == CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED)
        *value = rdma && (int)strlen(rdma) > dev ? rdma[dev] == '1' : 1;
    else if (attr == CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) *value = 1;
    else *value = 0;
    note("cuDeviceGetAttribute attr=%d dev=%d -> %d", (int)attr, (int)dev, *value);
    return CUDA_SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer) {
    note("cuDeviceCanAccessPeer dev=%d peer=%d", (int)dev, (int)peer);
    *can = dev != peer;
    return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option) {
    note("cuMemGetAllocationGranularity handle_types=%d rdma=%d option=%d",
         (int)prop->requestedHandleTypes, (int)prop->allocFlags.gpuDirectRDMACapable, (int)option);
    *g = 2u << 20;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr,
                             unsigned long long flags) {
    *p = next_va;
    next_va += size + (1ull << 30);
    note("cuMemAddressReserve size=%zu align=%zu -> %#llx", size, align, (unsigned long long)*p);
    return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr p, size_t size) {
    note("cuMemAddressFree %#llx size=%zu", (unsigned long long)p, size);
    return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *out, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags) {
    note("cuMemCreate size=%zu type=%d device=%d handle_types=%d rdma=%d", size, (int)prop->type,
         prop->location.id, (int)prop->requestedHandleTypes, (int)prop->allocFlags.gpuDirectRDMACapable);
    for (int i = 0; i < SLOTS; i++)
        if (!handles[i].bytes) {
            handles[i] = (Handle){next_handle++, size, calloc(1, size), 0};
            *out = handles[i].id;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle id) {
    Handle *h = find_handle(id);
    note("cuMemRelease handle=%llu", (unsigned long long)id);
    if (!h) return refuse("release of an unknown handle");
    if (h->maps) return refuse("release of a handle that is still mapped");
    free(h->bytes);
    h->bytes = NULL;
    return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr p, size_t size, size_t offset, CUmemGenericAllocationHandle id,
                  unsigned long long flags) {
    Handle *h = find_handle(id);
    note("cuMemMap %#llx size=%zu offset=%zu handle=%llu", (unsigned long long)p, size, offset,
         (unsigned long long)id);
    if (!h || offset || size != h->size) return refuse("map of a part of a handle");
    if (mapping_at(p) || mapping_at(p + size - 1)) return refuse("map over a mapping");
    for (int i = 0; i < SLOTS; i++)
        if (!mappings[i].h) {
            mappings[i] = (Mapping){p, size, h, 0};
            h->maps++;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemUnmap(CUdeviceptr p, size_t size) {
    Mapping *m = mapping_at(p);
    note("cuMemUnmap %#llx size=%zu", (unsigned long long)p, size);
    if (!m || m->at != p || m->size != size) return refuse("unmap that is not exactly one mapping");
    m->h->maps--;
    m->h = NULL;
    return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr p, size_t size, const CUmemAccessDesc *desc, size_t count) {
    char devices[64] = "";
    unsigned mask = 0;
    for (size_t k = 0; k < count; k++) {
        char one[16];
        snprintf(one, sizeof one, "%s%d", k ? "," : "", desc[k].location.id);
        strncat(devices, one, sizeof devices - strlen(devices) - 1);
        if (desc[k].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) mask |= 1u << desc[k].location.id;
    }
    note("cuMemSetAccess %#llx size=%zu count=%zu devices=%s", (unsigned long long)p, size, count, devices);
    for (CUdeviceptr at = p; at < p + size;) {
        Mapping *m = mapping_at(at);
        if (!m || m->at != at) return refuse("access to an unmapped range");
        m->access |= mask;
        at += m->size;
    }
    return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult e, const char **s) { *s = "CUDA_ERROR_STUB"; return CUDA_SUCCESS; }
CUresult cuGetErrorString(CUresult e, const char **s) { *s = "stub driver error"; return CUDA_SUCCESS; }

CUresult cuGetProcAddress_v2(const char *name, void **fn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status) {
    *fn = dlsym(RTLD_DEFAULT, name);
    if (status) *status = *fn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return *fn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* device memory access for the self-test: device 0 touching [p, p + n) */
static unsigned char *device0(CUdeviceptr p, size_t n) {
    Mapping *m = mapping_at(p);
    if (!m || p + n > m->at + m->size || !(m->access & 1u)) {
        note("FAULT device 0 at %#llx", (unsigned long long)p);
        return NULL;
    }
    return m->h->bytes + (p - m->at);
}

int gt_stub_fill(unsigned long long p, int byte, size_t n) {
    unsigned char *b = device0(p, n);
    if (!b) return 1;
    memset(b, byte, n);
    return 0;
}

int gt_stub_read(unsigned long long p, unsigned char *out, size_t n) {
    unsigned char *b = device0(p, n);
    if (!b) return 1;
    memcpy(out, b, n);
    return 0;
}
