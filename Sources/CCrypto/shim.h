// OpenSSL libcrypto (libssl-dev) for the Bluetooth host's cryptographic functions.
//
// The embedded binary links libcrypto statically and must stay small (<= 8 MB): the EVP
// layer pulls in OpenSSL 3's provider framework and every algorithm of its default
// provider (about 3 MB). So the host uses OpenSSL's AES block function directly
// (AES_set_encrypt_key / AES_encrypt, deprecated in 3.0 but kept and maintained) and
// builds AES-CMAC (RFC 4493, NIST SP 800-38B) as the mode of operation around it. The
// EVP versions stay here for the tests, which check the two agree on random inputs.
#ifndef HCIGATT_CCRYPTO_SHIM_H
#define HCIGATT_CCRYPTO_SHIM_H

#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/aes.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stddef.h>
#include <string.h>

/// One AES-128 block encryption (the security function e, Core Vol 3 Part H §2.2.1).
/// Returns 1 on success, 0 on failure.
static inline int hcigatt_aes128_encrypt(const unsigned char *key, const unsigned char *block, unsigned char *out) {
    AES_KEY k;
    if (AES_set_encrypt_key(key, 128, &k) != 0) return 0;
    AES_encrypt(block, out, &k);
    OPENSSL_cleanse(&k, sizeof k);
    return 1;
}

/// Doubling in GF(2^128) with the CMAC polynomial (RFC 4493 §2.3, Generate_Subkey).
static inline void hcigatt_cmac_double(const unsigned char *in, unsigned char *out) {
    unsigned char carry = in[0] >> 7;
    for (int i = 0; i < 15; i++) out[i] = (unsigned char)((in[i] << 1) | (in[i + 1] >> 7));
    out[15] = (unsigned char)((in[15] << 1) ^ (carry ? 0x87 : 0x00));
}

/// AES-CMAC (RFC 4493) with a 128-bit key, on OpenSSL's AES block function.
/// Returns 1 on success, 0 on failure.
static inline int hcigatt_aes_cmac(const unsigned char *key, const unsigned char *message, size_t length,
                                   unsigned char *out) {
    AES_KEY k;
    if (AES_set_encrypt_key(key, 128, &k) != 0) return 0;
    unsigned char l[16] = {0}, k1[16], k2[16], x[16] = {0}, last[16];
    AES_encrypt(l, l, &k);
    hcigatt_cmac_double(l, k1);
    hcigatt_cmac_double(k1, k2);
    size_t blocks = (length + 15) / 16;
    int complete = length > 0 && length % 16 == 0;
    if (blocks == 0) blocks = 1;
    for (size_t b = 0; b + 1 < blocks; b++) {
        for (int i = 0; i < 16; i++) x[i] ^= message[16 * b + i];
        AES_encrypt(x, x, &k);
    }
    size_t tail = length - 16 * (blocks - 1);
    if (complete) {
        for (int i = 0; i < 16; i++) last[i] = message[16 * (blocks - 1) + i] ^ k1[i];
    } else {
        memset(last, 0, 16);
        if (tail > 0) memcpy(last, message + 16 * (blocks - 1), tail);
        last[tail] = 0x80;
        for (int i = 0; i < 16; i++) last[i] ^= k2[i];
    }
    for (int i = 0; i < 16; i++) x[i] ^= last[i];
    AES_encrypt(x, out, &k);
    OPENSSL_cleanse(&k, sizeof k);
    OPENSSL_cleanse(l, sizeof l);
    OPENSSL_cleanse(k1, sizeof k1);
    OPENSSL_cleanse(k2, sizeof k2);
    return 1;
}

/// AES-CMAC through OpenSSL's EVP_MAC ("CMAC", AES-128-CBC): the tests' reference.
static inline int hcigatt_aes_cmac_evp(const unsigned char *key, const unsigned char *message, size_t length,
                                       unsigned char *out) {
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "CMAC", NULL);
    if (mac == NULL) return 0;
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
    int ok = 0;
    if (ctx != NULL) {
        char cipher[] = "AES-128-CBC";
        OSSL_PARAM params[2];
        params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, cipher, 0);
        params[1] = OSSL_PARAM_construct_end();
        size_t written = 0;
        ok = EVP_MAC_init(ctx, key, 16, params) == 1
            && EVP_MAC_update(ctx, message, length) == 1
            && EVP_MAC_final(ctx, out, &written, 16) == 1
            && written == 16;
        EVP_MAC_CTX_free(ctx);
    }
    EVP_MAC_free(mac);
    return ok;
}

/// AES-CCM (NIST SP 800-38C, RFC 3610) with a 128-bit key and a 13-byte nonce (L = 2, so
/// messages up to 65535 bytes), on OpenSSL's AES block function like CMAC above: the
/// BTHome v2 encrypted advertisements (and the LE link layer's CCM) use it. `mic_length` is
/// M: 4, 6, 8 ... 16. `aad` may be NULL when `aad_length` is 0. `out` receives
/// `length` bytes (in place is allowed: `out` may equal `in`).
/// encrypt = 1: `mic` receives the M-byte tag. encrypt = 0: `mic` is checked, in constant
/// time, and `out` is wiped when it does not match.
/// Returns 1 on success (and, decrypting, a matching tag), 0 otherwise.
static inline int hcigatt_aes_ccm(int encrypt, const unsigned char *key, const unsigned char *nonce,
                                  const unsigned char *aad, size_t aad_length,
                                  const unsigned char *in, size_t length, unsigned char *out,
                                  unsigned char *mic, size_t mic_length) {
    if (length > 0xFFFF || aad_length > 0xFEFF || mic_length < 4 || mic_length > 16 || (mic_length & 1)) return 0;
    AES_KEY k;
    if (AES_set_encrypt_key(key, 128, &k) != 0) return 0;
    unsigned char x[16], a[16], s[16];
    /* CBC-MAC: B0 = flags | nonce | message length. */
    x[0] = (unsigned char)((aad_length > 0 ? 0x40 : 0) | (((mic_length - 2) / 2) << 3) | 0x01);
    memcpy(x + 1, nonce, 13);
    x[14] = (unsigned char)(length >> 8);
    x[15] = (unsigned char)length;
    AES_encrypt(x, x, &k);
    if (aad_length > 0) {
        /* The associated data, prefixed with its 2-byte length, in 16-byte blocks. */
        size_t used = 2;
        x[0] ^= (unsigned char)(aad_length >> 8);
        x[1] ^= (unsigned char)aad_length;
        for (size_t i = 0; i < aad_length; i++) {
            if (used == 16) { AES_encrypt(x, x, &k); used = 0; }
            x[used++] ^= aad[i];
        }
        AES_encrypt(x, x, &k);
    }
    /* Counter blocks A_i = flags(L-1) | nonce | i; S_0 masks the tag. */
    a[0] = 0x01;
    memcpy(a + 1, nonce, 13);
    for (size_t block = 0; block * 16 < length; block++) {
        size_t n = length - block * 16 < 16 ? length - block * 16 : 16;
        size_t counter = block + 1;
        a[14] = (unsigned char)(counter >> 8);
        a[15] = (unsigned char)counter;
        AES_encrypt(a, s, &k);
        for (size_t i = 0; i < n; i++) {
            unsigned char p = encrypt ? in[block * 16 + i] : (unsigned char)(in[block * 16 + i] ^ s[i]);
            out[block * 16 + i] = encrypt ? (unsigned char)(p ^ s[i]) : p;
            x[i] ^= p;
        }
        AES_encrypt(x, x, &k);
    }
    a[14] = 0;
    a[15] = 0;
    AES_encrypt(a, s, &k);
    int ok = 1;
    if (encrypt) {
        for (size_t i = 0; i < mic_length; i++) mic[i] = (unsigned char)(x[i] ^ s[i]);
    } else {
        unsigned char diff = 0;
        for (size_t i = 0; i < mic_length; i++) diff |= (unsigned char)(mic[i] ^ x[i] ^ s[i]);
        ok = diff == 0;
        if (!ok) OPENSSL_cleanse(out, length);
    }
    OPENSSL_cleanse(&k, sizeof k);
    OPENSSL_cleanse(x, sizeof x);
    OPENSSL_cleanse(s, sizeof s);
    return ok;
}

/// AES-128-CCM through OpenSSL's EVP (13-byte nonce): the tests' reference.
static inline int hcigatt_aes_ccm_evp(int encrypt, const unsigned char *key, const unsigned char *nonce,
                                      const unsigned char *aad, int aad_length,
                                      const unsigned char *in, int length, unsigned char *out,
                                      unsigned char *mic, int mic_length) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return 0;
    int ok = 0, n = 0;
    if (EVP_CipherInit_ex(ctx, EVP_aes_128_ccm(), NULL, NULL, NULL, encrypt) == 1
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, 13, NULL) == 1
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, mic_length, encrypt ? NULL : mic) == 1
        && EVP_CipherInit_ex(ctx, NULL, NULL, key, nonce, encrypt) == 1
        && EVP_CipherUpdate(ctx, NULL, &n, NULL, length) == 1
        && (aad_length == 0 || EVP_CipherUpdate(ctx, NULL, &n, aad, aad_length) == 1)
        && EVP_CipherUpdate(ctx, out, &n, in, length) == 1) {
        ok = encrypt ? EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, mic_length, mic) == 1 : 1;
    }
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

#endif
