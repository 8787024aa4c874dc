/* Facts about the machine the agent runs on (Linux /proc and uname). */
#ifndef TC_HOSTINFO_H
#define TC_HOSTINFO_H

#include <stddef.h>
#include <stdint.h>

/* Host name ("unknown" if it cannot be read). */
void tc_host_name(char *buf, size_t size);
/* CPU model string from /proc/cpuinfo, e.g. "AMD EPYC 7B13". */
void tc_cpu_model(char *buf, size_t size);
/* Logical CPUs this process may run on (sched_getaffinity). */
unsigned tc_cpu_logical(void);
/* Physical cores (distinct core ids per package), or logical if unknown. */
unsigned tc_cpu_physical(void);
/* Total memory in bytes (MemTotal), 0 if unknown. */
uint64_t tc_mem_total(void);
/* MemAvailable of /proc/meminfo in bytes (0 if unknown). */
uint64_t tc_mem_available(void);
/* Nominal CPU clock in MHz from /proc/cpuinfo, 0 if unknown. */
unsigned tc_cpu_mhz(void);
/* Kernel and C library: "Linux 6.1.0 glibc 2.36". */
void tc_os_version(char *buf, size_t size);

#endif
