/* Host-side conversions between float and the storage dtypes, for the tools. */
#include "tool.h"

#include <math.h>
#include <string.h>

uint16_t tool_f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u, exp = (u >> 23) & 0xffu, man = u & 0x7fffffu;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++; /* may carry into inf: right */
    return (uint16_t)(sign | h);
}

float tool_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    float f;
    if (exp == 0) f = ldexpf((float)man, -24);
    else if (exp == 31) f = man ? NAN : INFINITY;
    else f = ldexpf((float)(man | 0x400u), (int)exp - 25);
    uint32_t u;
    memcpy(&u, &f, 4);
    u |= sign;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t tool_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float tool_bf16_to_f32(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

void tool_store(clnorm_dtype d, const float *src, void *dst, size_t n)
{
    if (d == CLNORM_F32) { memcpy(dst, src, n * 4); return; }
    uint16_t *o = dst;
    for (size_t i = 0; i < n; i++)
        o[i] = d == CLNORM_F16 ? tool_f32_to_f16(src[i]) : tool_f32_to_bf16(src[i]);
}

void tool_load(clnorm_dtype d, const void *src, float *dst, size_t n)
{
    if (d == CLNORM_F32) { memcpy(dst, src, n * 4); return; }
    const uint16_t *in = src;
    for (size_t i = 0; i < n; i++)
        dst[i] = d == CLNORM_F16 ? tool_f16_to_f32(in[i]) : tool_bf16_to_f32(in[i]);
}
