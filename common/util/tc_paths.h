/* Where the binaries find the files they ship with: the PyTorch harness
 * (agent/harness) and the committed weight-free ONNX exports (tests/data).
 *
 * In order: the environment variable (TRAINCAST_HARNESS_DIR,
 * TRAINCAST_DATA_DIR); the installed copy next to the executable
 * (PREFIX/share/traincast/{harness,models} for PREFIX/bin/agent, as
 * `cmake --install` and the traincast-common package lay it out); the
 * source tree the binary was built from, while it exists. When none exists
 * the installed place is returned, so that errors name where the package
 * puts the files, never a build machine's source tree. */
#ifndef TC_PATHS_H
#define TC_PATHS_H

#include <stddef.h>
#include <stdio.h>

typedef enum { TC_DIR_HARNESS, TC_DIR_MODELS } tc_dir_t;

/* Where the source tree the program was built from keeps the harness and
 * the exports: a program's main says it once at start-up (the executables
 * and the tests know their build's paths; this library does not). */
void tc_resource_set_built(const char *harness, const char *models);

/* The directory for `which`, written to buf; returns buf. Looked up on each
 * call, so a change of the environment variable takes effect. */
const char *tc_resource_dir(tc_dir_t which, char *buf, size_t size);

/* The rule itself, for tests: env (may be NULL or empty), the built-in
 * source path, the executable's path (may be NULL) and the installed
 * directory's name under share/traincast. Writes the answer to out. */
void tc_resource_pick(const char *env, const char *built, const char *exe,
                      const char *installed_name, char *out, size_t size);

/* A state or key directory: the flag's value, else $ENV_NAME, else
 * $HOME/.traincast/SUB (./.traincast/SUB without a HOME). */
void tc_state_dir(const char *flag, const char *env_name, const char *sub, char *out,
                  size_t size);

/* Open `path` for writing, created with mode 0600 (whatever the umask) or
 * truncated: for files in an agent's state directory. NULL with errno set
 * on failure. */
FILE *tc_fopen_private(const char *path);

#endif
