// Runs kernels/*.cu as host C++ so CI checks their logic without a GPU.
//
// Force-included by the host build (g++ -std=c++20 -include this -x c++
// kernels/x.cu); the .cu files themselves include nothing. It provides the CUDA
// built-ins the kernels use and `fzshim::launch`, which runs a grid one block
// at a time. The threads of a block are real, separate flows of control that
// only meet at barriers, in one of two ways:
//
// - Fibers (ucontext, the default): every CUDA thread has its own stack; a
//   thread runs until it reaches __syncthreads or a warp vote and waits there
//   until every thread of the block (or warp) has arrived. Deterministic and
//   fast; a missing barrier shows as a read of data not yet written.
// - Threads: one std::thread per CUDA thread, std::barrier for __syncthreads
//   and per warp: true concurrency, so races can show too; slow on few cores.
//
// __shared__ becomes `static`: one copy per process, which is one copy per
// block because blocks run one after another and launches are serialised.
#pragma once

#include <barrier>
#include <csetjmp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <ucontext.h>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

using std::fabs;
using std::sqrt;

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1)
        : x(x_), y(y_), z(z_) {}
};

inline thread_local dim3 threadIdx;
inline thread_local dim3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;

namespace fzshim {

constexpr unsigned int kWarp = 32;

enum class Mode { Fibers, Threads };

[[noreturn]] inline void fatal(const char* why) {
    std::fprintf(stderr, "fzshim: %s\n", why);
    std::abort();
}

inline unsigned int linear_thread() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

// ---------------------------------------------------------------- fibers

// Barrier 0 is the block, barrier 1 + w is warp w. A finished thread leaves
// every barrier (as an exited CUDA thread no longer takes part).
class FiberBlock {
  public:
    // Stacks for n threads, reused by every block of a launch.
    explicit FiberBlock(unsigned int n)
        : n_(n), fibers_(n), arrived_(1 + n / kWarp), expected_(1 + n / kWarp) {
        for (auto& f : fibers_) {
            f.stack.reset(new char[kStack]);
            getcontext(&f.start);
            f.start.uc_stack.ss_sp = f.stack.get();
            f.start.uc_stack.ss_size = kStack;
            f.start.uc_link = nullptr;  // entry() never returns: it jumps back
        }
    }

    // Runs one block: every fiber from the start of `body(rank)` to its end.
    // A fiber starts with setcontext (its own stack); after that every switch,
    // at a barrier or at the end, is _setjmp / _longjmp, which unlike
    // swapcontext saves no signal mask: no system call per switch, which is
    // what the shim's time went to.
    void run(std::function<void(unsigned int)> body) {
        body_ = std::move(body);
        expected_[0] = n_;
        for (unsigned int w = 0; w < n_ / kWarp; w++) expected_[1 + w] = kWarp;
        for (auto& a : arrived_) a = 0;
        for (auto& f : fibers_) {
            f.done = false;
            f.started = false;
            f.waiting = -1;
        }
        for (;;) {
            bool ran = false, all_done = true;
            for (unsigned int t = 0; t < n_; t++) {
                Fiber& f = fibers_[t];
                if (f.done) continue;
                all_done = false;
                if (f.waiting >= 0) continue;
                ran = true;
                cur_ = t;
                set_thread_idx(t);
                active() = this;
                if (_setjmp(sched_) == 0) {
                    if (f.started) _longjmp(f.jb, 1);
                    f.started = true;
                    ucontext_t c = f.start;
                    makecontext(&c, &FiberBlock::entry, 0);
                    setcontext(&c);
                }
                // Back here when fiber t waits at a barrier or finishes.
            }
            if (all_done) return;
            if (!ran) fatal("deadlock: threads wait at barriers that others never reach");
        }
    }

    // The running fiber arrives at barrier `b` and waits for the others.
    void wait(unsigned int b) {
        Fiber& f = fibers_[cur_];
        f.waiting = (int)b;
        if (++arrived_[b] == expected_[b])
            release(b);
        else if (_setjmp(f.jb) == 0)
            _longjmp(sched_, 1);
        set_thread_idx(cur_);
    }

    static FiberBlock*& active() {
        static FiberBlock* a = nullptr;
        return a;
    }

  private:
    static constexpr size_t kStack = 256 * 1024;
    struct Fiber {
        ucontext_t start;  // the fresh context each block's run begins from
        jmp_buf jb;        // where a waiting fiber resumes
        std::unique_ptr<char[]> stack;
        bool done = false;
        bool started = false;
        int waiting = -1;
    };

    static void entry() {
        FiberBlock* b = active();
        unsigned int t = b->cur_;
        b->body_(t);
        b->fibers_[t].done = true;
        b->fibers_[t].waiting = -1;
        b->leave(0);
        b->leave(1 + t / kWarp);
        _longjmp(b->sched_, 1);  // to the scheduler; this stack is done
    }

    void leave(unsigned int b) {
        --expected_[b];
        if (arrived_[b] > 0 && arrived_[b] == expected_[b]) release(b);
    }

    void release(unsigned int b) {
        arrived_[b] = 0;
        for (auto& f : fibers_)
            if (f.waiting == (int)b) f.waiting = -1;
    }

    void set_thread_idx(unsigned int t) {
        threadIdx = dim3(t % blockDim.x, t / blockDim.x % blockDim.y, t / (blockDim.x * blockDim.y));
    }

    unsigned int n_;
    std::function<void(unsigned int)> body_;
    std::vector<Fiber> fibers_;
    std::vector<unsigned int> arrived_, expected_;
    jmp_buf sched_;
    unsigned int cur_ = 0;
};

// ---------------------------------------------------------------- OS threads

struct ThreadBlock {
    explicit ThreadBlock(unsigned int threads) : sync(threads) {
        for (unsigned int w = 0; w < threads / kWarp; w++) warps.push_back(std::make_unique<std::barrier<>>(kWarp));
    }
    std::barrier<> sync;
    std::vector<std::unique_ptr<std::barrier<>>> warps;
};

// ---------------------------------------------------------------- dispatch

inline Mode mode = Mode::Fibers;
inline ThreadBlock* thread_block = nullptr;
inline std::vector<unsigned int> votes;  // one slot per thread of the block

// Barrier 0 = the block, 1 + w = warp w.
inline void barrier(unsigned int b) {
    if (mode == Mode::Fibers)
        FiberBlock::active()->wait(b);
    else if (b == 0)
        thread_block->sync.arrive_and_wait();
    else
        thread_block->warps[b - 1]->arrive_and_wait();
}

inline std::mutex& launch_lock() {
    static std::mutex m;
    return m;
}

// Runs `kernel(args...)` over `grid` x `block`, blocks one after another.
// Launches are serialised. Throws std::runtime_error for a block size the shim
// cannot model (warps must be whole) or when threads cannot be started.
template <class... P, class... A>
void launch(Mode m, dim3 grid, dim3 block, void (*kernel)(P...), A... args) {
    std::lock_guard<std::mutex> lock(launch_lock());
    unsigned int threads = block.x * block.y * block.z;
    if (threads == 0 || threads % kWarp != 0 || threads > 1024)
        throw std::runtime_error("fzshim::launch: block size must be a multiple of 32, at most 1024");
    mode = m;
    gridDim = grid;
    blockDim = block;
    votes.assign(threads, 0);
    std::unique_ptr<FiberBlock> fibers;
    if (m == Mode::Fibers) fibers = std::make_unique<FiberBlock>(threads);
    for (unsigned int bz = 0; bz < grid.z; bz++)
        for (unsigned int by = 0; by < grid.y; by++)
            for (unsigned int bx = 0; bx < grid.x; bx++) {
                auto body = [&](unsigned int t) {
                    threadIdx = dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
                    blockIdx = dim3(bx, by, bz);
                    kernel(args...);
                };
                if (m == Mode::Fibers) {
                    fibers->run(body);
                    FiberBlock::active() = nullptr;
                } else {
                    ThreadBlock tb(threads);
                    thread_block = &tb;
                    std::vector<std::thread> pool;
                    for (unsigned int t = 0; t < threads; t++) pool.emplace_back(body, t);
                    for (auto& th : pool) th.join();
                    thread_block = nullptr;
                }
            }
}

}  // namespace fzshim

inline void __syncthreads() { fzshim::barrier(0); }

// Whole warps only (the kernels vote with every lane present).
inline unsigned int __ballot_sync(unsigned int mask, bool pred) {
    if (mask != 0xffffffffu) fzshim::fatal("__ballot_sync needs the full mask");
    unsigned int t = fzshim::linear_thread(), w = t / fzshim::kWarp;
    fzshim::votes[t] = pred ? 1u : 0u;
    fzshim::barrier(1 + w);  // every lane has voted
    unsigned int r = 0;
    for (unsigned int l = 0; l < fzshim::kWarp; l++) r |= fzshim::votes[w * fzshim::kWarp + l] << l;
    fzshim::barrier(1 + w);  // every lane has read before the next vote
    return r;
}

inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __clz(unsigned int x) { return x == 0 ? 32 : __builtin_clz(x); }

// A warp barrier (whole warps only, as __ballot_sync).
inline void __syncwarp(unsigned int mask = 0xffffffffu) {
    if (mask != 0xffffffffu) fzshim::fatal("__syncwarp needs the full mask");
    fzshim::barrier(1 + fzshim::linear_thread() / fzshim::kWarp);
}

inline unsigned int atomicAdd(unsigned int* p, unsigned int x) {
    return __atomic_fetch_add(p, x, __ATOMIC_RELAXED);
}
inline unsigned int atomicOr(unsigned int* p, unsigned int x) {
    return __atomic_fetch_or(p, x, __ATOMIC_RELAXED);
}
inline unsigned int atomicMax(unsigned int* p, unsigned int x) {
    unsigned int old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (old < x && !__atomic_compare_exchange_n(p, &old, x, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}

inline unsigned int __float_as_uint(float x) {
    unsigned int b;
    std::memcpy(&b, &x, sizeof b);
    return b;
}
inline float __uint_as_float(unsigned int b) {
    float x;
    std::memcpy(&x, &b, sizeof x);
    return x;
}
inline long long __double_as_longlong(double x) {
    long long b;
    std::memcpy(&b, &x, sizeof b);
    return b;
}
inline double __longlong_as_double(long long b) {
    double x;
    std::memcpy(&x, &b, sizeof x);
    return x;
}

// ---------------------------------------------------------------- launch by name

// `FZSHIM_EXPORT(k)` at the end of a .cu file (empty under NVRTC) defines
// `extern "C" int fzshim_k_k(mode, grid, block, args)`: a launch of kernel k
// over grid x block (`unsigned int[3]` each, x y z) with its arguments passed
// as cuLaunchKernel's kernelParams (one pointer per parameter, to a value of
// that parameter's type).
// Host code written once against src/gpu/exec.rs's `Exec` runs on a GPU
// through cudarc and in tests through these (tests/common/shim_exec.rs).
// Returns 0, or -1 when the launch throws (its message on stderr).
//
// It also defines `extern "C" const char* fzshim_sig_k()`: k's parameter
// types, read from its C++ declaration, as src/gpu/launch.rs's `Sig::text`
// writes a Rust declaration's, so the tests catch a declaration that has
// drifted from its kernel.
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace fzshim {

template <class... P, std::size_t... I>
void launch_params(Mode m, dim3 grid, dim3 block, void (*kernel)(P...), void* const* a,
                   std::index_sequence<I...>) {
    launch(m, grid, block, kernel, *static_cast<std::remove_cv_t<P>*>(a[I])...);
}

template <class... P>
int launch_by_params(int mode, dim3 grid, dim3 block, void (*kernel)(P...), void* const* args) {
    try {
        launch_params(mode ? Mode::Threads : Mode::Fibers, grid, block, kernel, args,
                      std::index_sequence_for<P...>{});
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fzshim: %s\n", e.what());
        return -1;
    }
}

// One parameter's code: u, i or f and the width in bits for a number, s and
// the size in bytes for a struct, `*` before a pointer's element (const-ness
// dropped).
template <class T>
std::string param_code() {
    using U = std::remove_cv_t<T>;
    if constexpr (std::is_pointer_v<U>) {
        return "*" + param_code<std::remove_pointer_t<U>>();
    } else if constexpr (std::is_floating_point_v<U>) {
        return "f" + std::to_string(8 * sizeof(U));
    } else if constexpr (std::is_integral_v<U>) {
        return (std::is_signed_v<U> ? "i" : "u") + std::to_string(8 * sizeof(U));
    } else {
        static_assert(std::is_class_v<U>, "a kernel parameter of a type the signature cannot name");
        return "s" + std::to_string(sizeof(U));
    }
}

// The codes of a kernel's parameters, joined by commas (one string per
// parameter list, built once).
template <class... P>
const char* signature(void (*)(P...)) {
    static const std::string sig = [] {
        std::string s;
        ((s += (s.empty() ? "" : ",") + param_code<P>()), ...);
        return s;
    }();
    return sig.c_str();
}

}  // namespace fzshim

#define FZSHIM_EXPORT(kernel)                                                                    \
    extern "C" int fzshim_k_##kernel(int mode, const unsigned int* grid,                         \
                                     const unsigned int* block, void* const* args) {             \
        return fzshim::launch_by_params(mode, dim3(grid[0], grid[1], grid[2]),                   \
                                        dim3(block[0], block[1], block[2]), kernel, args);       \
    }                                                                                            \
    extern "C" const char* fzshim_sig_##kernel() { return fzshim::signature(kernel); }
