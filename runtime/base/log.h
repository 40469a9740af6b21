/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Diagnostics sink. The library never prints to the user; it may leave
 * debug and warning lines here, which go to stderr or to the runc-style
 * --log file, as text or as JSON lines (--log-format). Both are what
 * runc's logger writes, so clients that read runc's log read ours:
 * text `time="..." level=debug msg="..."`, JSON one object per line with
 * `level`, `msg` and an RFC 3339 `time`.
 */
#ifndef CRYO_LOG_H
#define CRYO_LOG_H

#include <stdbool.h>

enum cryo_log_level {
	CRYO_LOG_ERROR,
	CRYO_LOG_WARNING,
	CRYO_LOG_INFO,
	CRYO_LOG_DEBUG,
};

enum cryo_log_format {
	CRYO_LOG_TEXT,
	CRYO_LOG_JSON,
};

/* path NULL = stderr. Returns 0 or -errno. */
int cryo_log_init(const char *path, enum cryo_log_format format, bool debug);
void cryo_log_close(void);
/* True when diagnostics go to a --log file rather than to stderr. */
bool cryo_log_to_file(void);
/* True with --debug (the programs cryo runs may be told to be verbose too). */
bool cryo_log_debugging(void);

void cryo_log(enum cryo_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define cryo_debug(...) cryo_log(CRYO_LOG_DEBUG, __VA_ARGS__)
#define cryo_info(...) cryo_log(CRYO_LOG_INFO, __VA_ARGS__)
#define cryo_warn(...) cryo_log(CRYO_LOG_WARNING, __VA_ARGS__)
#define cryo_err(...) cryo_log(CRYO_LOG_ERROR, __VA_ARGS__)

#endif
