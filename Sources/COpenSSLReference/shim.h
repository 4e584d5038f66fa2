// OpenSSL's libcrypto (libssl-dev) as an independent reference for the tests only: the
// host's AES-CMAC and AES-CCM, and the proxy's X25519 and ChaCha20-Poly1305 (BearSSL,
// CBearSSL), are checked against OpenSSL's EVP on
// random inputs. No product target depends on this module; the embedded binary has no
// OpenSSL.
#ifndef HCIGATT_COPENSSLREFERENCE_SHIM_H
#define HCIGATT_COPENSSLREFERENCE_SHIM_H

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stddef.h>

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

/// X25519 through OpenSSL's EVP_PKEY derive: the tests' reference for the proxy's Noise.
static inline int hcigatt_x25519_evp(const unsigned char *scalar, const unsigned char *point, unsigned char *out) {
    EVP_PKEY *priv = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, scalar, 32);
    EVP_PKEY *peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, point, 32);
    EVP_PKEY_CTX *ctx = priv ? EVP_PKEY_CTX_new(priv, NULL) : NULL;
    size_t n = 32;
    int ok = ctx && peer && EVP_PKEY_derive_init(ctx) == 1 && EVP_PKEY_derive_set_peer(ctx, peer) == 1
        && EVP_PKEY_derive(ctx, out, &n) == 1 && n == 32;
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(peer);
    EVP_PKEY_free(priv);
    return ok;
}

/// ChaCha20-Poly1305 encryption through OpenSSL's EVP (12-byte nonce, 16-byte tag).
static inline int hcigatt_chachapoly_seal_evp(const unsigned char *key, const unsigned char *nonce,
                                              const unsigned char *aad, int aad_length,
                                              const unsigned char *in, int length, unsigned char *out, unsigned char *tag) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return 0;
    int n = 0;
    int ok = EVP_EncryptInit_ex(ctx, EVP_chacha20_poly1305(), NULL, key, nonce) == 1
        && (aad_length == 0 || EVP_EncryptUpdate(ctx, NULL, &n, aad, aad_length) == 1)
        && (length == 0 || EVP_EncryptUpdate(ctx, out, &n, in, length) == 1)
        && EVP_EncryptFinal_ex(ctx, out + length, &n) == 1
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag) == 1;
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

#endif
