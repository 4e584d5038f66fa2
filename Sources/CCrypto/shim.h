// OpenSSL libcrypto (libssl-dev) for the Bluetooth host's cryptographic functions.
// Small wrappers keep OSSL_PARAM and EVP context handling out of Swift.
#ifndef HCIGATT_CCRYPTO_SHIM_H
#define HCIGATT_CCRYPTO_SHIM_H

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stddef.h>

/// AES-CMAC (RFC 4493) with a 128-bit key. Returns 1 on success, 0 on failure.
static inline int hcigatt_aes_cmac(const unsigned char *key, const unsigned char *message, size_t length,
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

/// One AES-128 block encryption (the security function e, Core Vol 3 Part H §2.2.1).
/// Returns 1 on success, 0 on failure.
static inline int hcigatt_aes128_encrypt(const unsigned char *key, const unsigned char *block, unsigned char *out) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return 0;
    int length = 0;
    int ok = EVP_EncryptInit_ex(ctx, EVP_aes_128_ecb(), NULL, key, NULL) == 1
        && EVP_CIPHER_CTX_set_padding(ctx, 0) == 1
        && EVP_EncryptUpdate(ctx, out, &length, block, 16) == 1
        && length == 16;
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

#endif
