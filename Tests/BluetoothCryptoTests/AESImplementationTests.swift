import CBearSSL
import COpenSSLReference
import Testing
@testable import BluetoothCrypto

/// BearSSL picks AES-NI when the CPU has it, else its bitsliced constant-time code: both
/// must give the same blocks and CMACs (this machine runs the first, small boards the
/// second), and both must agree with OpenSSL's EVP CMAC, an independent implementation.
@Suite struct AESImplementationTests {
    @Test("FIPS-197 Appendix C.1 on the portable AES")
    func fips197OnThePortableAES() {
        let key = hexBytes("00010203 04050607 08090a0b 0c0d0e0f")
        let block = hexBytes("00112233 44556677 8899aabb ccddeeff")
        var out = [UInt8](repeating: 0, count: 16)
        hcigatt_aes128_encrypt_with(hcigatt_aes_portable_vtable(), key, block, &out)
        #expect(out == hexBytes("69c4e0d8 6a7b0430 d8cdb780 70b4c55a"))
    }

    @Test("CMAC: portable AES, default AES and OpenSSL's EVP agree on lengths 0...100")
    func cmacImplementationsAgree() throws {
        var rng = SystemRandomNumberGenerator()
        for n in 0 ... 100 {
            let key = (0 ..< 16).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
            let m = (0 ..< n).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
            var portable = [UInt8](repeating: 0, count: 16), evp = [UInt8](repeating: 0, count: 16)
            hcigatt_aes_cmac_with(hcigatt_aes_portable_vtable(), key, m, m.count, &portable)
            #expect(hcigatt_aes_cmac_evp(key, m, m.count, &evp) == 1)
            let host = try BluetoothCrypto.aesCMAC(key: key, message: m)
            #expect(host == evp && portable == evp, "length \(n)")
        }
    }
}
