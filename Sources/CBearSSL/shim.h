// BearSSL (libbearssl-dev): the one cryptographic library of hcigatt, linked statically
// into the embedded binary. The host's functions are here, on BearSSL's primitives:
// AES-128 (the security function e), AES-CMAC (RFC 4493; BearSSL has none, so it is the
// mode around the block cipher), AES-CCM (BearSSL's br_ccm) and P-256 (br_ec_p256_m31,
// which refuses points off the curve). The TLS client of the gateway is in Swift on
// br_ssl_client (HCIGATTGateway/MQTT/MQTTTLS.swift).
//
// AES runs through BearSSL's CTR+CBC-MAC class: the AES-NI implementation when the CPU
// has it, else the constant-time bitsliced one (ct64). One block of CBC-MAC from a zero
// IV is one block encryption.
#ifndef HCIGATT_CBEARSSL_SHIM_H
#define HCIGATT_CBEARSSL_SHIM_H

#include <bearssl.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

void explicit_bzero(void *s, size_t n);

/// The TLS engine's I/O buffer for full duplex: records of 16 KiB each way.
static inline size_t hcigatt_tls_buffer_size(void) { return BR_SSL_BUFSIZE_BIDI; }

/// An X.509 engine around BearSSL's minimal one that keeps the server's own certificate
/// (the first of the chain, up to 16 KiB) and hands it to `check` once the chain is
/// validated: the gateway checks there what the minimal engine cannot (an IP literal
/// against the iPAddress subject alternative names, a pinned certificate). `check` returns
/// 0 to accept, or a BR_ERR_X509_* code. With `pinned` set, a chain no anchor vouches for
/// (BR_ERR_X509_NOT_TRUSTED) still goes to `check`, which accepts only the pinned one.
typedef struct {
    const br_x509_class *vtable;
    br_x509_minimal_context *inner;
    unsigned (*check)(void *arg, const unsigned char *certificate, size_t length);
    void *arg;
    int pinned;
    uint32_t index;
    size_t length;
    int overflow;
    unsigned char certificate[16384];
} hcigatt_x509_check;

static void hcigatt_x509_check_start_chain(const br_x509_class **ctx, const char *server_name) {
    hcigatt_x509_check *c = (hcigatt_x509_check *)(void *)ctx;
    c->index = 0;
    c->length = 0;
    c->overflow = 0;
    c->inner->vtable->start_chain(&c->inner->vtable, server_name);
}

static void hcigatt_x509_check_start_cert(const br_x509_class **ctx, uint32_t length) {
    hcigatt_x509_check *c = (hcigatt_x509_check *)(void *)ctx;
    if (c->index == 0 && length > sizeof c->certificate) c->overflow = 1;
    c->inner->vtable->start_cert(&c->inner->vtable, length);
}

static void hcigatt_x509_check_append(const br_x509_class **ctx, const unsigned char *buf, size_t len) {
    hcigatt_x509_check *c = (hcigatt_x509_check *)(void *)ctx;
    if (c->index == 0 && !c->overflow) {
        if (len > sizeof c->certificate - c->length) {
            c->overflow = 1;
        } else {
            memcpy(c->certificate + c->length, buf, len);
            c->length += len;
        }
    }
    c->inner->vtable->append(&c->inner->vtable, buf, len);
}

static void hcigatt_x509_check_end_cert(const br_x509_class **ctx) {
    hcigatt_x509_check *c = (hcigatt_x509_check *)(void *)ctx;
    c->index++;
    c->inner->vtable->end_cert(&c->inner->vtable);
}

static unsigned hcigatt_x509_check_end_chain(const br_x509_class **ctx) {
    hcigatt_x509_check *c = (hcigatt_x509_check *)(void *)ctx;
    unsigned err = c->inner->vtable->end_chain(&c->inner->vtable);
    if (err != 0 && !(c->pinned && err == BR_ERR_X509_NOT_TRUSTED)) return err;
    if (c->overflow || c->length == 0) return BR_ERR_X509_BAD_SERVER_NAME;
    return c->check(c->arg, c->certificate, c->length);
}

static const br_x509_pkey *hcigatt_x509_check_get_pkey(const br_x509_class *const *ctx, unsigned *usages) {
    const hcigatt_x509_check *c = (const hcigatt_x509_check *)(const void *)ctx;
    /* The minimal engine hands out the key of an untrusted chain too (for wrappers). */
    return c->inner->vtable->get_pkey((const br_x509_class *const *)&c->inner->vtable, usages);
}

/// The bytes an hcigatt_x509_check takes (Swift holds it as raw memory: the struct with its
/// 16 KiB array is never a Swift type).
static inline size_t hcigatt_x509_check_size(void) { return sizeof(hcigatt_x509_check); }

/// Puts the check in `memory` (hcigatt_x509_check_size() bytes, 8-aligned) around `inner`
/// (set up by br_ssl_client_init_full) as `engine`'s X.509 engine.
static inline void hcigatt_x509_check_install(void *memory, br_ssl_engine_context *engine,
                                              br_x509_minimal_context *inner,
                                              unsigned (*check)(void *, const unsigned char *, size_t),
                                              void *arg, int pinned) {
    static const br_x509_class vtable = {
        sizeof(hcigatt_x509_check), hcigatt_x509_check_start_chain, hcigatt_x509_check_start_cert,
        hcigatt_x509_check_append, hcigatt_x509_check_end_cert, hcigatt_x509_check_end_chain,
        hcigatt_x509_check_get_pkey,
    };
    hcigatt_x509_check *c = (hcigatt_x509_check *)memory;
    c->vtable = &vtable;
    c->inner = inner;
    c->check = check;
    c->arg = arg;
    c->pinned = pinned;
    c->index = 0;
    c->length = 0;
    c->overflow = 0;
    br_ssl_engine_set_x509(engine, &c->vtable);
}

/// SHA-256 of `data` into `out` (32 bytes).
static inline void hcigatt_sha256(const unsigned char *data, size_t length, unsigned char *out) {
    br_sha256_context h;
    br_sha256_init(&h);
    br_sha256_update(&h, data, length);
    br_sha256_out(&h, out);
}

/// AES-128 with the fastest constant-time implementation this CPU runs.
static inline const br_block_ctrcbc_class *hcigatt_aes_vtable(void) {
    const br_block_ctrcbc_class *vt = br_aes_x86ni_ctrcbc_get_vtable();
    return vt != NULL ? vt : &br_aes_ct64_ctrcbc_vtable;
}

/// `block` = E(key, block ⊕ chain) in place through CBC-MAC: `chain` is the running value.
static inline void hcigatt_aes_chain(const br_aes_gen_ctrcbc_keys *k, unsigned char *chain,
                                     const unsigned char *block) {
    k->vtable->mac(&k->vtable, chain, block, 16);
}

/// The portable constant-time AES (bitsliced, ct64): what runs on a CPU without AES-NI.
/// The tests check it against the default one.
static inline const br_block_ctrcbc_class *hcigatt_aes_portable_vtable(void) {
    return &br_aes_ct64_ctrcbc_vtable;
}

/// One AES-128 block encryption (the security function e, Core Vol 3 Part H §2.2.1) with
/// the implementation `vt`.
static inline void hcigatt_aes128_encrypt_with(const br_block_ctrcbc_class *vt, const unsigned char *key,
                                               const unsigned char *block, unsigned char *out) {
    br_aes_gen_ctrcbc_keys k;
    vt->init(&k.vtable, key, 16);
    unsigned char x[16] = {0};
    hcigatt_aes_chain(&k, x, block);
    memcpy(out, x, 16);
    explicit_bzero(&k, sizeof k);
    explicit_bzero(x, sizeof x);
}

/// Doubling in GF(2^128) with the CMAC polynomial (RFC 4493 §2.3, Generate_Subkey).
static inline void hcigatt_cmac_double(const unsigned char *in, unsigned char *out) {
    unsigned char carry = in[0] >> 7;
    for (int i = 0; i < 15; i++) out[i] = (unsigned char)((in[i] << 1) | (in[i + 1] >> 7));
    /* No branch on a key-derived bit: the mask is 0x87 or 0. */
    out[15] = (unsigned char)((in[15] << 1) ^ (0x87 & (unsigned char)(0u - carry)));
}

/// One AES-128 block encryption with the default implementation.
static inline void hcigatt_aes128_encrypt(const unsigned char *key, const unsigned char *block, unsigned char *out) {
    hcigatt_aes128_encrypt_with(hcigatt_aes_vtable(), key, block, out);
}

/// An AES-128 key expanded once (the resolver keeps one per IRK): a block under it is
/// then one call, no key schedule per block.
typedef br_aes_gen_ctrcbc_keys hcigatt_aes_key;

static inline size_t hcigatt_aes_key_size(void) { return sizeof(hcigatt_aes_key); }

static inline void hcigatt_aes_key_init(hcigatt_aes_key *k, const unsigned char *key) {
    hcigatt_aes_vtable()->init(&k->vtable, key, 16);
}

/// E(k, block) into `out` (the key context is only read).
static inline void hcigatt_aes_key_encrypt(const hcigatt_aes_key *k, const unsigned char *block, unsigned char *out) {
    unsigned char x[16] = {0};
    hcigatt_aes_chain(k, x, block);
    memcpy(out, x, 16);
    explicit_bzero(x, sizeof x);
}

/// AES-CMAC (RFC 4493, NIST SP 800-38B) with a 128-bit key: CBC-MAC with the last block
/// masked by the subkey K1 (complete) or K2 (padded); AES from `vt`.
static inline void hcigatt_aes_cmac_with(const br_block_ctrcbc_class *vt, const unsigned char *key,
                                         const unsigned char *message, size_t length, unsigned char *out) {
    br_aes_gen_ctrcbc_keys k;
    vt->init(&k.vtable, key, 16);
    unsigned char l[16] = {0}, zero[16] = {0}, k1[16], k2[16], x[16] = {0}, last[16] = {0};
    hcigatt_aes_chain(&k, l, zero);
    hcigatt_cmac_double(l, k1);
    hcigatt_cmac_double(k1, k2);
    size_t blocks = length == 0 ? 1 : (length + 15) / 16;
    size_t tail = length - 16 * (blocks - 1);
    if (blocks > 1) k.vtable->mac(&k.vtable, x, message, 16 * (blocks - 1));
    if (length > 0 && tail == 16) {
        for (int i = 0; i < 16; i++) last[i] = message[16 * (blocks - 1) + i] ^ k1[i];
    } else {
        if (tail > 0) memcpy(last, message + 16 * (blocks - 1), tail);
        last[tail] = 0x80;
        for (int i = 0; i < 16; i++) last[i] ^= k2[i];
    }
    hcigatt_aes_chain(&k, x, last);
    memcpy(out, x, 16);
    explicit_bzero(&k, sizeof k);
    explicit_bzero(l, sizeof l);
    explicit_bzero(k1, sizeof k1);
    explicit_bzero(k2, sizeof k2);
    explicit_bzero(x, sizeof x);
    explicit_bzero(last, sizeof last);
}

/// AES-CMAC with the default AES implementation.
static inline void hcigatt_aes_cmac(const unsigned char *key, const unsigned char *message, size_t length,
                                    unsigned char *out) {
    hcigatt_aes_cmac_with(hcigatt_aes_vtable(), key, message, length, out);
}

/// AES-128-CCM (NIST SP 800-38C, RFC 3610) with a 13-byte nonce (L = 2: messages up to
/// 65535 bytes) on BearSSL's br_ccm: the BTHome v2 encrypted advertisements use it.
/// `mic_length` is M: 4, 6 ... 16. `aad` may be NULL when `aad_length` is 0. `out`
/// receives `length` bytes and may equal `in`.
/// encrypt = 1: `mic` receives the M-byte tag. encrypt = 0: `mic` is checked in constant
/// time and `out` is wiped when it does not match.
/// Returns 1 on success (and, decrypting, a matching tag), 0 otherwise.
static inline int hcigatt_aes_ccm(int encrypt, const unsigned char *key, const unsigned char *nonce,
                                  const unsigned char *aad, size_t aad_length,
                                  const unsigned char *in, size_t length, unsigned char *out,
                                  unsigned char *mic, size_t mic_length) {
    if (length > 0xFFFF || mic_length < 4 || mic_length > 16 || (mic_length & 1)) return 0;
    br_aes_gen_ctrcbc_keys k;
    br_ccm_context ccm;
    hcigatt_aes_vtable()->init(&k.vtable, key, 16);
    br_ccm_init(&ccm, &k.vtable);
    int ok = br_ccm_reset(&ccm, nonce, 13, aad_length, length, mic_length);
    if (ok) {
        if (aad_length > 0) br_ccm_aad_inject(&ccm, aad, aad_length);
        br_ccm_flip(&ccm);
        if (out != in && length > 0) memmove(out, in, length);
        br_ccm_run(&ccm, encrypt, out, length);
        if (encrypt) {
            br_ccm_get_tag(&ccm, mic);
        } else {
            ok = (int)br_ccm_check_tag(&ccm, mic);
            if (!ok) explicit_bzero(out, length);
        }
    }
    explicit_bzero(&ccm, sizeof ccm);
    explicit_bzero(&k, sizeof k);
    return ok;
}

/// 1 when the 32-byte big-endian `a` is below `b`, in constant time.
static inline int hcigatt_be32_less(const unsigned char *a, const unsigned char *b) {
    uint32_t less = 0, decided = 0;
    for (int i = 0; i < 32; i++) {
        uint32_t x = a[i], y = b[i];
        uint32_t lt = (x - y) >> 31, gt = (y - x) >> 31;
        less |= lt & ~decided;
        decided |= lt | gt;
    }
    return (int)less;
}

/// The order n of P-256's group and its field prime p, big-endian.
static const unsigned char hcigatt_p256_n[32] = {
    0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51};
static const unsigned char hcigatt_p256_p[32] = {
    0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};

/// 1 when 1 <= d < n: BearSSL leaves an out-of-range scalar undefined, so it is checked here.
static inline int hcigatt_p256_scalar_ok(const unsigned char *d) {
    unsigned char any = 0;
    for (int i = 0; i < 32; i++) any |= d[i];
    return any != 0 && hcigatt_be32_less(d, hcigatt_p256_n);
}

/// Q = d·G. `d`: 32 bytes big-endian; `x`, `y`: 32 bytes big-endian.
/// Returns 1; 0 for d out of 1...n-1.
static inline int hcigatt_p256_public_key(const unsigned char *d, unsigned char *x, unsigned char *y) {
    if (!hcigatt_p256_scalar_ok(d)) return 0;
    unsigned char q[65];
    size_t n = br_ec_p256_m31.mulgen(q, d, 32, BR_EC_secp256r1);
    if (n != 65 || q[0] != 0x04) return 0;
    memcpy(x, q + 1, 32);
    memcpy(y, q + 33, 32);
    return 1;
}

/// Whether (x, y) is a point of P-256: both coordinates below p (checked here: the curve
/// code reduces them) and on the curve (BearSSL's decoding checks the equation).
static inline int hcigatt_p256_is_valid(const unsigned char *qx, const unsigned char *qy) {
    if (!hcigatt_be32_less(qx, hcigatt_p256_p) || !hcigatt_be32_less(qy, hcigatt_p256_p)) return 0;
    unsigned char q[65], one[1] = {1};
    q[0] = 0x04;
    memcpy(q + 1, qx, 32);
    memcpy(q + 33, qy, 32);
    return (int)br_ec_p256_m31.mul(q, 65, one, 1, BR_EC_secp256r1);
}

/// ECDH: the x coordinate of d·Q, 32 bytes big-endian (the DHKey). A Q off the curve or
/// with coordinates not below p is refused before the private key touches it (the
/// invalid-curve attack). Returns 1; 0 for an invalid Q or d.
static inline int hcigatt_p256_ecdh(const unsigned char *d, const unsigned char *qx, const unsigned char *qy,
                                    unsigned char *out) {
    if (!hcigatt_p256_scalar_ok(d) || !hcigatt_p256_is_valid(qx, qy)) return 0;
    unsigned char q[65];
    q[0] = 0x04;
    memcpy(q + 1, qx, 32);
    memcpy(q + 33, qy, 32);
    int ok = (int)br_ec_p256_m31.mul(q, 65, d, 32, BR_EC_secp256r1);
    if (ok) memcpy(out, q + 1, 32);
    explicit_bzero(q, sizeof q);
    return ok;
}

// MARK: The proxy's Noise primitives (X25519, ChaCha20-Poly1305, HMAC-SHA256)

/// X25519 (RFC 7748 §5): `out` = X25519(`scalar`, `point`), all 32 bytes in RFC order
/// (little-endian, as BearSSL's c25519 takes them too; it clamps the scalar). Returns 0 when the result is all zero (a small-order point: Noise and
/// RFC 7748 §6.1 say to abort).
static inline int hcigatt_x25519(const unsigned char *scalar, const unsigned char *point, unsigned char *out) {
    unsigned char k[32], g[32];
    memcpy(k, scalar, 32);
    memcpy(g, point, 32);
    uint32_t ok = br_ec_c25519_m31.mul(g, 32, k, 32, BR_EC_curve25519);
    explicit_bzero(k, sizeof k);
    unsigned char any = 0;
    for (int i = 0; i < 32; i++) any |= g[i];
    memcpy(out, g, 32);
    explicit_bzero(g, sizeof g);
    return ok == 1 && any != 0;
}

/// The X25519 public key of `scalar` (the base point 9).
static inline int hcigatt_x25519_base(const unsigned char *scalar, unsigned char *out) {
    unsigned char nine[32] = {9};
    return hcigatt_x25519(scalar, nine, out);
}

/// ChaCha20-Poly1305 (RFC 8439) in place over `data`: encrypting writes the 16-byte tag
/// to `tag`; decrypting checks it in constant time and returns 0 (the data wiped) when
/// it does not match. The SSE2 and 64-bit multiply versions when the CPU has them.
static inline int hcigatt_chachapoly(int encrypt, const unsigned char *key, const unsigned char *nonce,
                                     const unsigned char *aad, size_t aad_len,
                                     unsigned char *data, size_t len, unsigned char *tag) {
    br_chacha20_run chacha = br_chacha20_sse2_get();
    if (chacha == 0) chacha = &br_chacha20_ct_run;
    br_poly1305_run poly = br_poly1305_ctmulq_get();
    if (poly == 0) poly = &br_poly1305_ctmul_run;
    if (encrypt) {
        poly(key, nonce, data, len, aad, aad_len, tag, chacha, 1);
        return 1;
    }
    unsigned char computed[16];
    // Decrypting: the tag is computed over the ciphertext, then the data decrypted.
    poly(key, nonce, data, len, aad, aad_len, computed, chacha, 0);
    unsigned char diff = 0;
    for (int i = 0; i < 16; i++) diff |= computed[i] ^ tag[i];
    if (diff != 0) {
        memset(data, 0, len);
        return 0;
    }
    return 1;
}

/// HMAC-SHA256 of `data` under `key` into `out` (32 bytes).
static inline void hcigatt_hmac_sha256(const unsigned char *key, size_t key_len, const unsigned char *data, size_t len,
                                       unsigned char *out) {
    br_hmac_key_context kc;
    br_hmac_context hc;
    br_hmac_key_init(&kc, &br_sha256_vtable, key, key_len);
    br_hmac_init(&hc, &kc, 0);
    br_hmac_update(&hc, data, len);
    br_hmac_out(&hc, out);
    explicit_bzero(&kc, sizeof kc);
    explicit_bzero(&hc, sizeof hc);
}

#endif
