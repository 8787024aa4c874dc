#include "agent_id.h"

#include "hostinfo.h"
#include "identity.h"
#include "tc_hash.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

void tc_agent_id_machine(char *buf, size_t size)
{
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
    uint32_t h = tc_fnv1a32_str(seed);
    /* Keep the host part readable and free of separators. */
    for (char *p = host; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.')
            *p = '_';
    snprintf(buf, size, "%.64s-%08x", host, h);
}

int tc_agent_id(const char *override, const char *state, char *buf, size_t size)
{
    if (override && *override) {
        snprintf(buf, size, "%s", override);
        return 0;
    }
    char dir[2048];
    tc_identity_default_dir(state, dir, sizeof dir);
    struct stat st;
    bool use_state = (state && *state) || (stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
    if (use_state) {
        char id[TC_AGENT_ID_MAX + 1];
        int rc = tc_identity_read_agent_id(dir, id, sizeof id);
        if (rc == 0) {
            snprintf(buf, size, "%s", id);
            return 0;
        }
        tc_agent_id_machine(buf, size);
        return rc;
    }
    tc_agent_id_machine(buf, size);
    return 0;
}
