// SPDX-License-Identifier: GPL-2.0-only
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "digest.h"
#include "manifest.h"
#include "sign.h"
#include "util.h"
#include "cli.h"

/* Any protobuf-c message as JSON, driven by its descriptor (bytes as hex). */
static struct json_object *field_json(const ProtobufCFieldDescriptor *f, const void *p)
{
	char *hex;
	struct json_object *o;
	const ProtobufCBinaryData *b;
	size_t i;

	switch (f->type) {
	case PROTOBUF_C_TYPE_BOOL:
		return json_object_new_boolean(*(const protobuf_c_boolean *)p);
	case PROTOBUF_C_TYPE_UINT32:
		return json_object_new_int64(*(const uint32_t *)p);
	case PROTOBUF_C_TYPE_UINT64:
		return json_object_new_uint64(*(const uint64_t *)p);
	case PROTOBUF_C_TYPE_INT32:
		return json_object_new_int(*(const int32_t *)p);
	case PROTOBUF_C_TYPE_STRING:
		return *(char *const *)p ? json_object_new_string(*(char *const *)p) : NULL;
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)p);

		return ev ? json_object_new_string(ev->name) : json_object_new_int(*(const int *)p);
	}
	case PROTOBUF_C_TYPE_BYTES:
		b = p;
		hex = malloc(2 * b->len + 1);
		if (!hex)
			return NULL;
		for (i = 0; i < b->len; i++)
			snprintf(hex + 2 * i, 3, "%02x", b->data[i]);
		hex[2 * b->len] = '\0';
		o = json_object_new_string(hex);
		free(hex);
		return o;
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *m = *(const ProtobufCMessage *const *)p;
		const ProtobufCMessageDescriptor *d;
		unsigned k;

		if (!m)
			return NULL;
		d = m->descriptor;
		o = json_object_new_object();
		for (k = 0; k < d->n_fields; k++) {
			const ProtobufCFieldDescriptor *fd = &d->fields[k];
			const char *base = (const char *)m;

			if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
				size_t n = *(const size_t *)(base + fd->quantifier_offset), j;
				const char *arr = *(char *const *)(base + fd->offset);
				size_t sz = fd->type == PROTOBUF_C_TYPE_MESSAGE || fd->type == PROTOBUF_C_TYPE_STRING ? sizeof(void *) :
					    fd->type == PROTOBUF_C_TYPE_BYTES ? sizeof(ProtobufCBinaryData) :
					    fd->type == PROTOBUF_C_TYPE_UINT64 ? 8 : 4;
				struct json_object *a = json_object_new_array();

				for (j = 0; j < n; j++)
					json_object_array_add(a, field_json(fd, arr + j * sz));
				json_object_object_add(o, fd->name, a);
				continue;
			}
			if (fd->label == PROTOBUF_C_LABEL_OPTIONAL && fd->quantifier_offset &&
			    !*(const protobuf_c_boolean *)(base + fd->quantifier_offset))
				continue;
			{
				struct json_object *v = field_json(fd, base + fd->offset);

				if (v)
					json_object_object_add(o, fd->name, v);
			}
		}
		return o;
	}
	default:
		return NULL;
	}
}

static struct json_object *manifest_json(const Cryo__Manifest *m)
{
	ProtobufCFieldDescriptor fd = { .type = PROTOBUF_C_TYPE_MESSAGE };
	const Cryo__Manifest *p = m;

	return field_json(&fd, &p);
}

static void print_human(const Cryo__Manifest *m, const char *verified, const char *signed_by, const char *sig)
{
	uint64_t total = 0;
	size_t i;
	char when[64] = "?";
	time_t t = (time_t)m->created_unix;
	struct tm tm;

	if (m->has_created_unix && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	for (i = 0; i < m->n_files; i++)
		total += m->files[i]->size;
	printf("container:      %s\n", m->container_id);
	printf("format:         %u (file digests: %s)\n", m->format_version,
	       cryo_digest_alg_name(cryo_manifest_digest(m)));
	printf("created:        %s on %s (kernel %s)\n", when, m->hostname ? m->hostname : "?",
	       m->kernel_release ? m->kernel_release : "?");
	printf("verified:       %s\n", verified);
	printf("signed:         %s\n", signed_by);
	if (sig)
		printf("signature:      %s\n", sig);
	printf("bundle:         %s\n", m->bundle ? m->bundle : "-");
	printf("state before:   %s (init pid %llu)\n", m->freezer_state ? m->freezer_state : "?",
	       (unsigned long long)m->init_pid);
	if (m->criu)
		printf("criu:           %u.%u.%u%s%s%s\n", m->criu->version_major, m->criu->version_minor,
		       m->criu->version_sublevel, m->criu->tcp_established ? " tcp-established" : "",
		       m->criu->leave_running ? " leave-running" : "", m->criu->pre_dump ? " pre-dump" : "");
	if (m->rootfs) {
		const ProtobufCEnumValue *ev =
			protobuf_c_enum_descriptor_get_value(&cryo__rootfs_snapshot__kind__descriptor, m->rootfs->kind);

		printf("rootfs:         %s `%s` (%llu bytes, %s) from `%s`%s\n", ev ? ev->name : "?",
		       m->rootfs->name ? m->rootfs->name : "-", (unsigned long long)m->rootfs->size,
		       m->rootfs->fstype ? m->rootfs->fstype : "?", m->rootfs->source ? m->rootfs->source : "?",
		       m->rootfs->fs_frozen ? ", taken under FIFREEZE" : "");
	}
	printf("files:          %zu, %llu bytes\n", m->n_files, (unsigned long long)total);
	printf("frozen window:  %.3f ms (container), %.3f ms (filesystem)\n", m->frozen_window_usec / 1000.0,
	       m->fs_frozen_window_usec / 1000.0);
	printf("total:          %.3f ms\n", m->total_usec / 1000.0);
	printf("steps:\n");
	for (i = 0; i < m->n_timings; i++)
		printf("  %-16s +%9.3f ms  %9.3f ms\n", m->timings[i]->step, m->timings[i]->start_usec / 1000.0,
		       m->timings[i]->usec / 1000.0);
}

int cmd_inspect(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "verify-key", required_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT, verr = CRYO_ERROR_INIT, serr = CRYO_ERROR_INIT;
	struct cryo_signature_info si;
	const char *verify_key = NULL;
	char signed_by[128], kid[17];
	int sr;
	bool is_signed;
	Cryo__Manifest *m = NULL;
	_cleanup_close_ int dfd = -1;
	bool json = false;
	int c, rc = 0;

	while ((c = cli_getopt(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'K':
			verify_key = optarg;
			break;
		case 'h':
			printf("Usage: cryo inspect [--json] [--verify-key FILE] DIR\n\n"
			       "Print the manifest of the checkpoint image DIR, whether it verifies and whether\n"
			       "it is signed; with --verify-key, whether the signature verifies with that key.\n");
			return 0;
		default:
			return 2;
		}
	}
	if (optind + 1 != argc)
		return cli_usage_error("inspect", "expects exactly one image directory");
	dfd = open(argv[optind], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		cryo_error_set(&err, errno, "image `%s`", argv[optind]);
		return cli_fail(&err);
	}
	if (cryo_manifest_read_at(dfd, &m, &err) < 0) {
		cryo_error_prefix(&err, "image `%s`", argv[optind]);
		return cli_fail(&err);
	}
	if (cryo_manifest_verify_at(dfd, m, &verr) < 0)
		rc = 1;
	/* who signed it (no key needed), and with --verify-key whether it holds */
	sr = cryo_image_signature_at(dfd, &si, &serr);
	is_signed = sr >= 0;
	if (sr >= 0) {
		cryo_sign_key_id_hex(si.key_id, kid);
		snprintf(signed_by, sizeof(signed_by), "%s, key %s", cryo_sign_alg_names[si.alg], kid);
	} else {
		snprintf(signed_by, sizeof(signed_by), "%s", sr == -ENOENT ? "no" : "unreadable or malformed `manifest.sig`");
	}
	if (verify_key) {
		cryo_error_clear(&serr);
		sr = cryo_image_verify_at(dfd, verify_key, &serr);
		if (sr < 0)
			rc = 1;
	}
	if (json) {
		struct json_object *o = manifest_json(m);

		json_object_object_add(o, "verified", json_object_new_boolean(!verr.msg));
		if (verr.msg)
			json_object_object_add(o, "verifyError", json_object_new_string(verr.msg));
		json_object_object_add(o, "signed", json_object_new_boolean(is_signed));
		if (is_signed) {
			json_object_object_add(o, "signatureAlgorithm", json_object_new_string(cryo_sign_alg_names[si.alg]));
			json_object_object_add(o, "signatureKeyId", json_object_new_string(kid));
		}
		if (verify_key)
			json_object_object_add(o, "signatureVerified", json_object_new_boolean(sr >= 0));
		if (serr.msg && (verify_key || sr != -ENOENT))
			json_object_object_add(o, "signatureError", json_object_new_string(serr.msg));
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		char yes[64];

		snprintf(yes, sizeof(yes), "yes (manifest and every file's %s)",
			 cryo_digest_alg_name(cryo_manifest_digest(m)));
		print_human(m, !verr.msg ? yes : verr.msg, signed_by,
			    verify_key ? (sr >= 0 ? "valid (verified with the given key)" : serr.msg) :
			    sr < 0 && sr != -ENOENT ? serr.msg : NULL);
	}
	cryo_error_clear(&verr);
	cryo_error_clear(&serr);
	cryo_manifest_free(m);
	return rc;
}
