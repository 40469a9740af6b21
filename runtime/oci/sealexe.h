/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Protection against CVE-2019-5736: a container whose process execs
 * /proc/self/exe of the init (still the runtime before execve) could reopen
 * the runtime binary for writing and replace it on the host. Commands that
 * start containers re-execute themselves from a sealed memfd copy first,
 * so /proc/self/exe of every process cryo puts in a container is an
 * anonymous, write-sealed file, never the host binary.
 */
#ifndef CRYO_SEALEXE_H
#define CRYO_SEALEXE_H

#include <stdbool.h>

#include "error.h"

/* true when the binary is immutable (chattr +i) or on a read-only mount. */
bool cryo_sealexe_binary_protected(void);

/* true when /proc/self/exe is a write-sealed memfd. */
bool cryo_sealexe_is_sealed(void);

/*
 * If not running from a protected binary yet (read-only mount, immutable,
 * or a sealed copy), execveat() the read-only bind mount of /proc/self/exe
 * or, when that fails, its sealed memfd copy, with this process's
 * arguments (from /proc/self/cmdline) and envp. Returns 0 when already
 * protected, and otherwise only on failure.
 */
int cryo_sealexe_ensure(char **envp, struct cryo_error *err);

#endif
