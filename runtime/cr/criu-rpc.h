/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A minimal client of CRIU's RPC (rpc.proto over a SOCK_SEQPACKET pair
 * to `criu swrk`), for what libcriu does not offer. Today: the
 * self-check with options. libcriu's criu_local_check() sends CHECK
 * without options, and criu 3.17's service dereferences them and
 * crashes (SIGSEGV in the check child), so the check never reports
 * anything; with options, CRIU logs to our log file and answers.
 *
 * The generated RPC types stay inside criu-rpc.c: they share names with
 * the copy <criu/criu.h> pulls in.
 */
#ifndef CRYO_CRIU_RPC_H
#define CRYO_CRIU_RPC_H

#include "error.h"

/*
 * CRIU's self-check, logging to log_file (a name) in the directory
 * dirfd. 0 when CRIU says the host is fine, -EOPNOTSUPP when it says
 * not (see the log), other -errno when CRIU could not be asked.
 */
int cryo_criu_rpc_check(int dirfd, const char *log_file, int log_level, struct cryo_error *err);

#endif
