#include "agent_id.h"

#include "hostinfo.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

void tc_agent_id(const char *override, char *buf, size_t size)
{
    if (override && *override) {
        snprintf(buf, size, "%s", override);
        return;
    }
    char host[256];
    tc_host_name(host, sizeof host);
    char seed[256] = "";
    FILE *f = fopen("/etc/machine-id", "r");
    if (f) {
        if (!fgets(seed, sizeof seed, f))
            seed[0] = '\0';
        fclose(f);
        seed[strcspn(seed, "\n")] = '\0';
    }
    if (!seed[0])
        snprintf(seed, sizeof seed, "%s", host);
    uint32_t h = 2166136261u;
    for (const char *s = seed; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    /* Keep the host part readable and free of separators. */
    for (char *p = host; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.')
            *p = '_';
    snprintf(buf, size, "%.64s-%08x", host, h);
}
