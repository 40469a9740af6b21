// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "log.h"

static int log_fd = STDERR_FILENO;
static enum cryo_log_format log_format = CRYO_LOG_TEXT;
static bool log_debug;

static const char *const level_names[] = {
	[CRYO_LOG_ERROR] = "error",
	[CRYO_LOG_WARNING] = "warning",
	[CRYO_LOG_INFO] = "info",
	[CRYO_LOG_DEBUG] = "debug",
};

int cryo_log_init(const char *path, enum cryo_log_format format, bool debug)
{
	log_format = format;
	log_debug = debug;
	if (path) {
		int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);

		if (fd < 0)
			return -errno;
		cryo_log_close();
		log_fd = fd;
	}
	return 0;
}

void cryo_log_close(void)
{
	if (log_fd != STDERR_FILENO)
		close(log_fd);
	log_fd = STDERR_FILENO;
}

bool cryo_log_debugging(void)
{
	return log_debug;
}

bool cryo_log_to_file(void)
{
	return log_fd != STDERR_FILENO;
}

/* logrus quotes a text value Go-style: backslash, quote and controls escaped. */
static void quote(char *out, size_t size, const char *in)
{
	size_t o = 0;

	out[o++] = '"';
	for (; *in && o + 6 < size; in++) {
		unsigned char ch = (unsigned char)*in;

		if (ch == '"' || ch == '\\') {
			out[o++] = '\\';
			out[o++] = (char)ch;
		} else if (ch == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else if (ch < 0x20) {
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", ch);
		} else {
			out[o++] = (char)ch;
		}
	}
	out[o++] = '"';
	out[o] = '\0';
}

void cryo_log(enum cryo_log_level level, const char *fmt, ...)
{
	char msg[4096], quoted[4096 * 2], line[8192 + 128], stamp[64];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n;

	if (level == CRYO_LOG_DEBUG && !log_debug)
		return;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		 tm.tm_sec, ts.tv_nsec / 1000);

	if (log_format == CRYO_LOG_JSON) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "level", json_object_new_string(level_names[level]));
		json_object_object_add(o, "msg", json_object_new_string(msg));
		json_object_object_add(o, "time", json_object_new_string(stamp));
		n = snprintf(line, sizeof(line), "%s\n",
			     json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
	} else {
		quote(quoted, sizeof(quoted), msg);
		n = snprintf(line, sizeof(line), "time=\"%s\" level=%s msg=%s\n", stamp, level_names[level], quoted);
	}
	if (n > 0) {
		size_t len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;

		if (write(log_fd, line, len) < 0) {
			/* nowhere left to report a failed log write */
		}
	}
}
