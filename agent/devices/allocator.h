/* The memory allocator a CPU device measures with.
 *
 * A framework's CPU time depends on its allocator as much as on its
 * kernels: glibc hands large blocks back to the kernel on free, and every
 * page of the next tensor is faulted in again (on a virtual machine that
 * can cost more than the convolution). PyTorch's own CPU launcher
 * (torch/backends/xeon/run_cpu.py) therefore preloads a caching allocator.
 * The agent does the same: a measuring command re-executes itself once with
 * the chosen allocator in LD_PRELOAD (and its tuning in the environment),
 * so its conv benchmarks and the trace runner it starts (which inherits the
 * environment) allocate the same way. The allocator actually loaded is part
 * of the CPU device's identity (agent/devices/cpu/cpu_device.c).
 *
 * Choices (docs/reports/allocators.md has the measurements behind the default):
 *   tcmalloc     gperftools' tcmalloc_minimal (Debian libtcmalloc-minimal4)
 *   jemalloc     jemalloc with PyTorch's launcher settings and purging off
 *                (Debian libjemalloc2)
 *   glibc-tuned  glibc with MALLOC_MMAP_MAX_=0 and a 4 GB trim threshold:
 *                freed memory stays in the process
 *   system       the process as it was started, nothing preloaded or set */
#ifndef TC_ALLOCATOR_H
#define TC_ALLOCATOR_H

#include <stdbool.h>
#include <stddef.h>

#define TC_ALLOCATOR_DEFAULT "tcmalloc"

/* The --allocator entry of a measuring command's option table. */
#define TC_ALLOCATOR_OPT(var)                                                                      \
    {"allocator", TC_OPT_STR, &(var), "NAME",                                                      \
     "memory allocator of the cpu device: tcmalloc (default), jemalloc, glibc-tuned, or system "  \
     "(the process as started); another allocator is another device"}

/* The choices as "tcmalloc, jemalloc, glibc-tuned or system". */
const char *tc_allocator_choices(void);

/* 0 if `name` is a choice, else TC_EUSAGE naming the choices. */
int tc_allocator_check(const char *name);

/* Register the program's argv so tc_allocator_apply() can re-execute it.
 * Only the agent binary's main() does this; without it (the code linked
 * into tests or other programs) apply() changes nothing. */
void tc_allocator_set_argv(int argc, char **argv);
/* That argv (NULL when none was registered: linked into another program). */
char **tc_process_argv(void);

/* Make this process run with allocator `name` (NULL: TRAINCAST_ALLOCATOR,
 * else the default). Call after parsing options and before anything is
 * opened or measured. When the allocator is not the one loaded, the
 * process re-executes itself with it (this call then does not return).
 * An unknown name is TC_EUSAGE; an explicitly chosen allocator whose
 * library is missing is TC_ENOTFOUND naming its Debian package (the default
 * one only warns and measures with the system allocator). Records the
 * choice for tc_allocator_choice(). */
int tc_allocator_apply(const char *name);

/* The choice in effect ("system" before apply). */
const char *tc_allocator_choice(void);

/* The allocator this process allocates with, as it identifies a device:
 * "tcmalloc 2.10", "jemalloc 5.3.0 decay -1/-1", "glibc 2.36",
 * "glibc 2.36 tuned". The trace runner describes itself the same way. */
void tc_allocator_describe(char *buf, size_t size);

#endif
