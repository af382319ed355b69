/* The attention cases' harness (attention.c): a problem, its 4-D views laid out in
   either layout with padding, the call on canary-guarded buffers, and the check
   against a float64 reference. */
#ifndef CLNORM_TEST_ATTENTION_H
#define CLNORM_TEST_ATTENTION_H

#include "clnorm.h"
#include <stddef.h>

typedef struct att_case {
    clnorm_dtype dt;
    size_t batch, qh, kvh, q_len, kv_len, hd;
    int causal;
    float scale;            /* 0: the library's 1/sqrt(head_dim) */
    const int *lens;        /* batch kv_lens values, or NULL */
    int q_bthd, kv_bthd;    /* [b][t][h][d] views instead of [b][h][t][d] */
    size_t pad;             /* elements between rows (poisoned in out, canaries in inputs) */
    size_t off;             /* every view's offset */
    int no_lse;             /* pass lse = NULL */
} att_case;

/* Host values, packed [b][h][t][d], already rounded to the dtype. */
typedef struct att_data { float *q, *k, *v; } att_data;
/* Results read back, packed: out [b][h][t][d], lse [b][h][t]. */
typedef struct att_result { float *out, *lse; } att_result;

/* Random values of c's shape: q and k spread so that scores range over about +-8. */
void att_make(const att_case *c, att_data *d);
void att_data_free(att_data *d);
void att_result_free(att_result *r);
/* A one-line description of c, for messages. */
const char *att_label(const att_case *c);
/* Runs clnorm_attention on buffers laid out as c says (canaries around and between the
   inputs, poison in out), checks that out's gaps and lse's tail kept their poison and
   that every out element and lse was written (SUCCESS), or that nothing changed (a
   refusal), and reads the results. Returns the call's status. */
clnorm_status att_run(const att_case *c, const att_data *d, att_result *r);
/* float64 reference: out, lse and the largest |v| each query sees. */
void att_ref(const att_case *c, const att_data *d, double *out, double *lse, double *vmax);
/* Compares r with the reference within API.md's bound; returns the bad elements. */
size_t att_verify(const att_case *c, const att_data *d, const att_result *r);
/* att_run + att_verify expecting SUCCESS; returns the bad elements (or 1). */
size_t att_check(const att_case *c);
/* The attention tolerance of API.md, relative to the largest |v| a query sees. */
double att_tol(clnorm_dtype dt);

#endif
