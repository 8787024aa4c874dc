#include "hostinfo.h"

#include <ctype.h>
#include <gnu/libc-version.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

void tc_host_name(char *buf, size_t size)
{
    if (gethostname(buf, size) != 0 || !buf[0])
        snprintf(buf, size, "unknown");
    buf[size - 1] = '\0';
}

/* Value of the first "key : value" line of /proc/cpuinfo with this key. */
static int s_cpuinfo(const char *key, char *buf, size_t size)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return -1;
    char line[512];
    size_t klen = strlen(key);
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0 || (line[klen] != ' ' && line[klen] != '\t' &&
                                              line[klen] != ':'))
            continue;
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *v = colon + 1;
        while (isspace((unsigned char)*v))
            v++;
        v[strcspn(v, "\n")] = '\0';
        snprintf(buf, size, "%s", v);
        found = 0;
        break;
    }
    fclose(f);
    return found;
}

void tc_cpu_model(char *buf, size_t size)
{
    if (s_cpuinfo("model name", buf, size) != 0 && s_cpuinfo("Model", buf, size) != 0)
        snprintf(buf, size, "unknown CPU");
    /* Collapse runs of spaces some vendors pad the string with. */
    char *w = buf;
    for (char *r = buf; *r; r++) {
        if (*r == ' ' && w > buf && w[-1] == ' ')
            continue;
        *w++ = *r;
    }
    *w = '\0';
}

unsigned tc_cpu_logical(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return (unsigned)CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

unsigned tc_cpu_physical(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return tc_cpu_logical();
    char line[256];
    int phys = -1;
    /* Pairs (physical id, core id) seen; small machines only need a few. */
    int seen[1024][2];
    unsigned n = 0;
    while (fgets(line, sizeof line, f)) {
        int v;
        if (sscanf(line, "physical id : %d", &v) == 1) {
            phys = v;
        } else if (sscanf(line, "core id : %d", &v) == 1) {
            int dup = 0;
            for (unsigned i = 0; i < n; i++)
                dup |= seen[i][0] == phys && seen[i][1] == v;
            if (!dup && n < 1024) {
                seen[n][0] = phys;
                seen[n][1] = v;
                n++;
            }
        }
    }
    fclose(f);
    unsigned logical = tc_cpu_logical();
    return n > 0 && n <= logical ? n : logical;
}

/* A "NAME: N kB" line of /proc/meminfo, in bytes (0 unknown). */
static uint64_t s_meminfo(const char *name)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256], fmt[64];
    snprintf(fmt, sizeof fmt, "%s: %%llu kB", name);
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, fmt, &kb) == 1)
            break;
    }
    fclose(f);
    return (uint64_t)kb * 1024;
}

uint64_t tc_mem_total(void)
{
    return s_meminfo("MemTotal");
}

uint64_t tc_mem_available(void)
{
    return s_meminfo("MemAvailable");
}

unsigned tc_cpu_mhz(void)
{
    char buf[64];
    if (s_cpuinfo("cpu MHz", buf, sizeof buf) != 0)
        return 0;
    return (unsigned)(atof(buf) + 0.5);
}

void tc_os_version(char *buf, size_t size)
{
    struct utsname u;
    if (uname(&u) != 0)
        snprintf(buf, size, "unknown");
    else
        snprintf(buf, size, "%s %s glibc %s", u.sysname, u.release, gnu_get_libc_version());
}
