/* Tuning tables: measured plans per device (tuning.c). `clnorm tune` stores the
   fastest plan per (op, dtype, column bucket) in the cache folder; a call applies it
   unless its tuning hint is 0 (CLNORM_TUNING=off) or its work-group, items per row,
   variant or split hint forces a shape. */
#ifndef CLNORM_TUNING_H
#define CLNORM_TUNING_H

#include "plan.h"
#include "types.h"

typedef struct cln_tune_entry {
    cln_op op;            /* as asked; CLN_OP_SOFTMAX_AUTO picks the algorithm */
    clnorm_dtype dtype;
    size_t cols, rows;    /* the shape measured */
    cln_op algo;          /* resolved operation (== op except for AUTO) */
    cln_variant variant;
    cln_path path;
    size_t wg, team, slices; /* slices: split only, else 0 */
    double best_us, builtin_us;
} cln_tune_entry;
/* The device's tuning file: path and key text. */
CLN_HIDDEN int cln_tuning_file(const cln_profile *p, char *path, size_t len, char *key,
                               size_t klen);
/* Reads and checks the device's table (entries malloc'd). CLN_DISK_* status. */
CLN_HIDDEN int cln_tuning_read(const cln_profile *p, cln_tune_entry **e, size_t *n);
/* Writes the table (creating the folder); CLN_DISK_* status. */
CLN_HIDDEN int cln_tuning_write(const cln_profile *p, const cln_tune_entry *e, size_t n);
/* Text of one entry, as the file and `clnorm tune --show` hold it. */
CLN_HIDDEN void cln_tuning_line(const cln_tune_entry *e, char *buf, size_t len);
/* Forces the table's plan for (op, dtype, cols) into lim (and resolves a softmax AUTO
   op) when an entry fits and the plan it gives is valid; returns 1 if applied. */
CLN_HIDDEN int cln_tuning_apply(const cln_profile *p, cln_op *op, clnorm_dtype dtype,
                                size_t rows, size_t cols, cln_limits *lim);
/* Forgets the tables read so far (tests, `clnorm tune`). */
CLN_HIDDEN void cln_tuning_reset(void);

#endif
