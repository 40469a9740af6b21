/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Typed readers of config.json (json-c), for spec.c and the parsers of its
 * sections: `name` is the dotted field name, so every rejection names the
 * field exactly ("config.json: linux.resources.pids.limit: ..."). Types are
 * checked strictly (a string where a number belongs is an error); an
 * absent or null optional field leaves *ret (and *has) untouched.
 */
#ifndef CRYO_SPEC_JSON_H
#define CRYO_SPEC_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "error.h"

#define CRYO_SPEC_CFG "config.json: "

/* Free the first n strings of v, then v (NULL is fine). */
void cryo_spec_strv_free(char **v, size_t n);

struct json_object *cryo_spec_json_field(struct json_object *o, const char *key);
int cryo_spec_json_bad(struct cryo_error *err, const char *name, const char *what);
int cryo_spec_json_get_object(struct json_object *o, const char *key, const char *name, struct json_object **ret,
		      struct cryo_error *err);
int cryo_spec_json_get_array(struct json_object *v, const char *name, size_t max, size_t size,
			     void **ret, size_t *ret_n, struct cryo_error *err);
int cryo_spec_json_get_string(struct json_object *o, const char *key, const char *name, size_t max, char **ret,
		      struct cryo_error *err);
int cryo_spec_json_get_bool(struct json_object *o, const char *key, const char *name, bool *ret,
			    struct cryo_error *err);
int cryo_spec_json_get_int(struct json_object *o, const char *key, const char *name, int64_t min, int64_t max,
		   int64_t *ret, bool *has, struct cryo_error *err);
int cryo_spec_json_get_u32(struct json_object *o, const char *key, const char *name, uint32_t *ret, bool *has,
		   struct cryo_error *err);
int cryo_spec_json_get_strv(struct json_object *o, const char *key, const char *name, size_t max, bool nonempty,
		    char ***ret, size_t *ret_n, struct cryo_error *err);
/* A string-to-string map entry of config.json (linux.sysctl, linux.resources.unified). */
struct cryo_spec_kv {
	char *key;
	char *value;
};

/*
 * An object of strings (linux.sysctl): *ret gets its entries in order, at
 * most max; an absent or null object leaves *ret NULL.
 */
int cryo_spec_json_get_string_map(struct json_object *o, const char *key, const char *name, size_t max,
				  struct cryo_spec_kv **ret, size_t *ret_n, struct cryo_error *err);
void cryo_spec_string_map_free(struct cryo_spec_kv *m, size_t n);
int cryo_spec_json_check_abs_path(const char *p, const char *name, struct cryo_error *err);

/* Sections parsed in files of their own, for spec.c (spec-resources.c). */
struct cryo_spec;
struct cryo_spec_resources;
int cryo_spec_parse_resources(struct json_object *lnx, struct cryo_spec_resources *res, struct cryo_error *err);

#endif
