/* Host-side merge of online-softmax statistics. */
#include "clnorm.h"

#include <math.h>

/* Weight of a part whose maximum is mp inside a union whose maximum is m. Written
   so that -inf - (-inf) and +inf - (+inf) are never computed. */
static float cln_weight(float mp, float m)
{
    if (mp == m) return isinf(m) && m < 0 ? 0.0f : 1.0f;
    return expf(mp - m);
}

void clnorm_stats_merge(float ma, float la, float mb, float lb, float *m, float *l)
{
    if (!m || !l) return;
    if (isnan(ma) || isnan(la) || isnan(mb) || isnan(lb)) {
        *m = NAN;
        *l = NAN;
        return;
    }
    float mm = ma > mb ? ma : mb;
    float wa = la == 0.0f ? 0.0f : la * cln_weight(ma, mm);
    float wb = lb == 0.0f ? 0.0f : lb * cln_weight(mb, mm);
    *m = mm;
    *l = wa + wb;
}
