/*
 * Host or device? ADIOS2 hands Operate and InverseOperate the user's pointer,
 * which in a GPU-enabled ADIOS2 build (MemorySpace::GPU) may be CUDA device
 * memory. The operator must never read or write that as host memory.
 *
 * Detection goes through the CUDA driver API only if the process has already
 * loaded the driver (dlopen RTLD_NOLOAD): a process that never loaded
 * libcuda cannot hold device memory, and the operator must not be the one to
 * start CUDA. Device buffers are staged through host memory (cuMemcpy); the
 * compression itself runs on the CPU until factz's CUDA backend lands.
 *
 * Note: no GPU was available where this was written; the device branch has
 * not executed anywhere yet (the detection's no-driver branch has, in CI).
 */
#ifndef FACTZ_ADIOS_DEVICE_MEMORY_H
#define FACTZ_ADIOS_DEVICE_MEMORY_H

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace factz_adios
{

class CudaDriver
{
public:
    /* The driver if this process has loaded it, else an inert object. */
    static const CudaDriver &get()
    {
        static const CudaDriver driver;
        return driver;
    }

    /* True iff `p` is device (not managed, not host) memory. */
    bool is_device(const void *p) const
    {
        if (!m_getAttribute || !p)
            return false;
        unsigned type = 0;
        int managed = 0;
        if (m_getAttribute(&type, ATTR_MEMORY_TYPE, reinterpret_cast<uintptr_t>(p)) != 0)
            return false; /* not known to CUDA: ordinary host memory */
        if (m_getAttribute(&managed, ATTR_IS_MANAGED, reinterpret_cast<uintptr_t>(p)) == 0 &&
            managed)
            return false; /* managed memory is host-accessible */
        return type == MEMORYTYPE_DEVICE;
    }

    void to_host(void *dst, const void *device_src, size_t bytes) const
    {
        WithContext ctx(*this, device_src);
        check(m_memcpyDtoH(dst, reinterpret_cast<uintptr_t>(device_src), bytes), "cuMemcpyDtoH");
    }

    void to_device(void *device_dst, const void *src, size_t bytes) const
    {
        WithContext ctx(*this, device_dst);
        check(m_memcpyHtoD(reinterpret_cast<uintptr_t>(device_dst), src, bytes), "cuMemcpyHtoD");
    }

private:
    /* CUpointer_attribute / CUmemorytype values from cuda.h (stable since CUDA 4). */
    static constexpr int ATTR_CONTEXT = 1;
    static constexpr int ATTR_MEMORY_TYPE = 2;
    static constexpr int ATTR_IS_MANAGED = 8;
    static constexpr unsigned MEMORYTYPE_DEVICE = 2;

    using GetAttribute = int (*)(void *, int, uintptr_t);
    using MemcpyDtoH = int (*)(void *, uintptr_t, size_t);
    using MemcpyHtoD = int (*)(uintptr_t, const void *, size_t);
    using CtxPush = int (*)(void *);
    using CtxPop = int (*)(void **);

    GetAttribute m_getAttribute = nullptr;
    MemcpyDtoH m_memcpyDtoH = nullptr;
    MemcpyHtoD m_memcpyHtoD = nullptr;
    CtxPush m_ctxPush = nullptr;
    CtxPop m_ctxPop = nullptr;

    CudaDriver()
    {
        void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        if (!lib)
            return;
        m_getAttribute = reinterpret_cast<GetAttribute>(dlsym(lib, "cuPointerGetAttribute"));
        m_memcpyDtoH = reinterpret_cast<MemcpyDtoH>(dlsym(lib, "cuMemcpyDtoH_v2"));
        m_memcpyHtoD = reinterpret_cast<MemcpyHtoD>(dlsym(lib, "cuMemcpyHtoD_v2"));
        m_ctxPush = reinterpret_cast<CtxPush>(dlsym(lib, "cuCtxPushCurrent_v2"));
        m_ctxPop = reinterpret_cast<CtxPop>(dlsym(lib, "cuCtxPopCurrent_v2"));
        if (!m_memcpyDtoH || !m_memcpyHtoD || !m_ctxPush || !m_ctxPop)
            m_getAttribute = nullptr; /* incomplete driver: detect nothing, touch nothing */
    }

    static void check(int status, const char *what)
    {
        if (status != 0)
            throw std::runtime_error(std::string("factz operator: ") + what +
                                     " failed (CUDA error " + std::to_string(status) + ")");
    }

    /* Makes the buffer's own context current for the copy. */
    struct WithContext
    {
        const CudaDriver &d;
        bool pushed = false;
        WithContext(const CudaDriver &driver, const void *p) : d(driver)
        {
            void *ctx = nullptr;
            if (d.m_getAttribute(&ctx, ATTR_CONTEXT, reinterpret_cast<uintptr_t>(p)) == 0 && ctx)
                pushed = d.m_ctxPush(ctx) == 0;
        }
        ~WithContext()
        {
            void *ignored = nullptr;
            if (pushed)
                d.m_ctxPop(&ignored);
        }
    };
};

} // namespace factz_adios

#endif
