// P-256 (secp256r1) for LE Secure Connections from GNU Nettle's hogweed (nettle-dev, with
// GMP), linked statically into the embedded binary.
//
// Why not OpenSSL: its EC code reaches the error queue, the object database and the
// library context, and through them the provider framework: statically linked it adds
// about 3.6 MB (measured: 4.35 MB against 0.70 MB for a program using only AES), which
// breaks the 8 MB limit of the embedded binary. Nettle's ECC adds about 155 KB. AES-128 and
// AES-CMAC stay on OpenSSL (CCrypto).
#ifndef HCIGATT_CNETTLE_SHIM_H
#define HCIGATT_CNETTLE_SHIM_H

#include <gmp.h>
#include <nettle/ecc-curve.h>
#include <nettle/ecc.h>
#include <stddef.h>
#include <string.h>

/// Reads a 32-byte big-endian number into `z`.
static inline void hcigatt_p256_import(mpz_t z, const unsigned char *bytes) {
    mpz_import(z, 32, 1, 1, 1, 0, bytes);
}

/// Writes `z` (< 2^256) as 32 bytes big-endian.
static inline void hcigatt_p256_export(unsigned char *bytes, const mpz_t z) {
    size_t count = 0;
    unsigned char tmp[32];
    memset(bytes, 0, 32);
    if (mpz_sizeinbase(z, 2) > 256) return;
    mpz_export(tmp, &count, 1, 1, 1, 0, z);
    if (count <= 32) memcpy(bytes + 32 - count, tmp, count);
}

/// Q = d·G. `d`: 32 bytes big-endian with 1 <= d < n (the caller draws it from the
/// system's random source). `x`, `y`: 32 bytes big-endian. Returns 1; 0 for d out of range.
static inline int hcigatt_p256_public_key(const unsigned char *d, unsigned char *x, unsigned char *y) {
    const struct ecc_curve *curve = nettle_get_secp_256r1();
    struct ecc_scalar k;
    struct ecc_point q;
    mpz_t z, qx, qy;
    int ok = 0;
    ecc_scalar_init(&k, curve);
    ecc_point_init(&q, curve);
    mpz_inits(z, qx, qy, NULL);
    hcigatt_p256_import(z, d);
    if (ecc_scalar_set(&k, z) == 1) {
        ecc_point_mul_g(&q, &k);
        ecc_point_get(&q, qx, qy);
        hcigatt_p256_export(x, qx);
        hcigatt_p256_export(y, qy);
        ok = 1;
    }
    mpz_clears(z, qx, qy, NULL);
    ecc_point_clear(&q);
    ecc_scalar_clear(&k);
    return ok;
}

/// ECDH: the x coordinate of d·Q, 32 bytes big-endian (the DHKey). Q = (qx, qy) must be a
/// point of the curve with coordinates below p: Nettle's ecc_point_set checks both, so an
/// invalid public key is refused before the private key touches it (the invalid-curve
/// attack). Returns 1; 0 for an invalid Q or d.
static inline int hcigatt_p256_ecdh(const unsigned char *d, const unsigned char *qx, const unsigned char *qy,
                                    unsigned char *out) {
    const struct ecc_curve *curve = nettle_get_secp_256r1();
    struct ecc_scalar k;
    struct ecc_point q, r;
    mpz_t z, x, y;
    int ok = 0;
    ecc_scalar_init(&k, curve);
    ecc_point_init(&q, curve);
    ecc_point_init(&r, curve);
    mpz_inits(z, x, y, NULL);
    hcigatt_p256_import(z, d);
    hcigatt_p256_import(x, qx);
    hcigatt_p256_import(y, qy);
    if (ecc_scalar_set(&k, z) == 1 && ecc_point_set(&q, x, y) == 1) {
        ecc_point_mul(&r, &k, &q);
        ecc_point_get(&r, x, NULL);
        hcigatt_p256_export(out, x);
        ok = 1;
    }
    mpz_clears(z, x, y, NULL);
    ecc_point_clear(&r);
    ecc_point_clear(&q);
    ecc_scalar_clear(&k);
    return ok;
}

/// Whether (x, y) is a point of P-256 (coordinates below p, on the curve).
static inline int hcigatt_p256_is_valid(const unsigned char *qx, const unsigned char *qy) {
    const struct ecc_curve *curve = nettle_get_secp_256r1();
    struct ecc_point q;
    mpz_t x, y;
    ecc_point_init(&q, curve);
    mpz_inits(x, y, NULL);
    hcigatt_p256_import(x, qx);
    hcigatt_p256_import(y, qy);
    int ok = ecc_point_set(&q, x, y);
    mpz_clears(x, y, NULL);
    ecc_point_clear(&q);
    return ok;
}

#endif
