/* RMSNorm: y = x * (sum(x^2) / cols + eps)^(-1/2) * gamma, one team of work-items per
   row. The sum of squares is accumulated in float32 whatever the storage. */
__kernel void clnorm_rmsnorm(__global const cln_t *x, ulong xoff, ulong xld,
                             __global const cln_t *gamma, uint has_gamma,
                             __global cln_t *y, ulong yoff, ulong yld,
                             ulong rows, ulong cols, float eps, uint team,
                             __local float *scratch)
{
    CLN_ROW_SETUP();
    __global const cln_t *xr = x + xoff + row * xld;
    float ss = 0.0f;
    if (active)
        for (ulong c = lane; c < cols; c += team) {
            float v = CLN_LOAD(xr, c);
            ss = fma(v, v, ss);
        }
    ss = cln_sum(ss, scratch, lid, lane, team);
    if (!active) return;
    float r = 1.0f / sqrt(ss / (float)cols + eps);
    __global cln_t *yr = y + yoff + row * yld;
    for (ulong c = lane; c < cols; c += team) {
        float o = CLN_LOAD(xr, c) * r;
        if (has_gamma) o *= CLN_LOAD(gamma, c);
        CLN_STORE(yr, c, o);
    }
}
