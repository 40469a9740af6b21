// SPDX-License-Identifier: GPL-2.0-only
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>

#include "util.h"
#include "cli.h"
#include "migrate-common.h"

int cli_migrate_parse_ms(const char *cmd, const char *opt, const char *arg, int64_t *ret)
{
	uint64_t v;

	if (cryo_parse_u64(arg, 24ULL * 3600 * 1000, &v) < 0 || v == 0)
		return cli_usage_error(cmd, "--%s takes milliseconds, not `%s`", opt, arg);
	*ret = (int64_t)v;
	return 0;
}

int cli_migrate_opt(const char *cmd, int c, const char *arg, const struct cli_migrate_args *a)
{
	switch (c) {
	case CLI_OPT_CERT:
		a->tls->cert = arg;
		return CLI_GO_ON;
	case CLI_OPT_KEY:
		a->tls->key = arg;
		return CLI_GO_ON;
	case CLI_OPT_CA:
		a->tls->ca = arg;
		return CLI_GO_ON;
	case CLI_OPT_TIMEOUT:
		return cli_migrate_parse_ms(cmd, "timeout", arg, a->timeout_ms) ? 2 : CLI_GO_ON;
	case CLI_OPT_LIST_STEPS:
		for (size_t i = 0; i < a->steps->n_steps; i++)
			printf("%s\n", a->steps->steps[i].name);
		return 0;
	default:
		return 2;
	}
}

void cli_migrate_progress(const struct cryo_migrate_progress *p, void *userdata)
{
	struct cli_progress *pc = userdata;
	double secs = (double)p->phase_us / 1e6;
	double rate = secs > 0 ? (double)p->bytes / secs : 0;

	if (pc->quiet)
		return;
	if (pc->json) {
		fprintf(stderr,
			"{\"progress\":{\"side\":\"%s\",\"phase\":\"%s\",\"done\":%s,\"bytes\":%" PRIu64
			",\"total\":%" PRIu64 ",\"rate_bps\":%.0f,\"elapsed_ms\":%.1f}}\n",
			p->side, p->phase, p->phase_done ? "true" : "false", p->bytes, p->total, rate,
			(double)p->phase_us / 1e3);
		return;
	}
	if (pc->tty) {
		if (p->phase_done) {
			fprintf(stderr, "\r\033[K%s: %-10s done in %.1f ms\n", p->side, p->phase, (double)p->phase_us / 1e3);
			pc->line_open = false;
		} else if (p->bytes || p->total) {
			double eta = rate > 0 && p->total > p->bytes ? (double)(p->total - p->bytes) / rate : 0;

			fprintf(stderr, "\r\033[K%s: %-10s %.1f/%.1f MiB  %.1f MiB/s  ETA %.0f s", p->side, p->phase,
				(double)p->bytes / 1048576.0, (double)p->total / 1048576.0, rate / 1048576.0, eta);
			pc->line_open = true;
		} else {
			fprintf(stderr, "\r\033[K%s: %-10s ...", p->side, p->phase);
			pc->line_open = true;
		}
		fflush(stderr);
		return;
	}
	if (p->phase_done)
		fprintf(stderr, "%s: %s done in %.1f ms\n", p->side, p->phase, (double)p->phase_us / 1e3);
	else if (p->bytes && p->total && p->bytes == p->total)
		fprintf(stderr, "%s: %s %.1f MiB at %.1f MiB/s\n", p->side, p->phase, (double)p->bytes / 1048576.0,
			rate / 1048576.0);
}

void cli_progress_end(struct cli_progress *pc)
{
	if (pc->line_open)
		fputc('\n', stderr);
	pc->line_open = false;
}

void cli_stream_begin(void)
{
	signal(SIGPIPE, SIG_IGN);
	/* frames (at most CRYO_MIGRATE_FRAME_MAX) come from the heap, which keeps what is freed */
	(void)mallopt(M_MMAP_THRESHOLD, 4 << 20);
	(void)mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

void cli_migrate_failed(const char *cmd, const char *phase, const char *peer, const char *peer_phase,
			const char *outcome)
{
	if (peer_phase)
		fprintf(stderr, "cryo %s: failed at %s (the %s at %s); %s\n", cmd, phase ? phase : "?", peer, peer_phase,
			outcome);
	else
		fprintf(stderr, "cryo %s: failed at %s; %s\n", cmd, phase ? phase : "?", outcome);
}
