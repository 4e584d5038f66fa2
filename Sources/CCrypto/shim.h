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

#endif
