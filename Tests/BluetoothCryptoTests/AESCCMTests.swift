import COpenSSLReference
import Testing
@testable import BluetoothCrypto

/// AES-CCM on the AES block function (BTHome v2's encrypted advertisements): RFC 3610's
/// packet vector, and agreement with OpenSSL's EVP AES-128-CCM on random inputs.
@Suite struct AESCCMTests {
    @Test func rfc3610PacketVector1() {
        let key = hexBytes("c0c1c2c3 c4c5c6c7 c8c9cacb cccdcecf")
        let nonce = hexBytes("00000003 020100a0 a1a2a3a4 a5")
        let aad = hexBytes("00010203 04050607")
        let plaintext = hexBytes("08090a0b 0c0d0e0f 10111213 14151617 18191a1b 1c1d1e")
        var out = [UInt8](repeating: 0, count: plaintext.count), mic = [UInt8](repeating: 0, count: 8)
        let ok = key.withUnsafeBytes { k in nonce.withUnsafeBytes { n in aad.withUnsafeBytes { a in plaintext.withUnsafeBytes { p in
            out.withUnsafeMutableBytes { o in mic.withUnsafeMutableBytes { m in
                BluetoothCrypto.aesCCMEncrypt(key: k, nonce: n, associatedData: a, plaintext: p, into: o, mic: m)
            } }
        } } } }
        #expect(ok)
        #expect(out == hexBytes("588c979a 61c663d2 f066d0c2 c0f98980 6d5f6b61 dac384"))
        #expect(mic == hexBytes("17e8d12c fdf926e0"))
        var back = [UInt8](repeating: 0, count: out.count)
        #expect(decrypt(key, nonce, aad, out, mic, into: &back))
        #expect(back == plaintext)
        // One flipped bit anywhere (message or tag) is refused, and nothing is left behind.
        for i in 0 ..< out.count + mic.count {
            var c = out, t = mic
            if i < c.count { c[i] ^= 0x01 } else { t[i - c.count] ^= 0x80 }
            var wiped = [UInt8](repeating: 0xAA, count: c.count)
            #expect(!decrypt(key, nonce, aad, c, t, into: &wiped))
            #expect(wiped.allSatisfy { $0 == 0 })
        }
    }

    @Test func agreesWithEVPOnRandomInputs() {
        var rng = SystemRandomNumberGenerator()
        for round in 0 ..< 300 {
            let key = (0 ..< 16).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
            let nonce = (0 ..< 13).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
            let length = round % 70, aadLength = [0, 0, 1, 13, 15, 30][round % 6]
            let micLength = [4, 4, 6, 8, 16][round % 5]
            let aad = (0 ..< aadLength).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
            let plaintext = (0 ..< length).map { _ in UInt8.random(in: 0 ... 255, using: &rng) }
            var ours = [UInt8](repeating: 0, count: length), ourMIC = [UInt8](repeating: 0, count: micLength)
            var evp = [UInt8](repeating: 0, count: length), evpMIC = [UInt8](repeating: 0, count: micLength)
            let ok = key.withUnsafeBytes { k in nonce.withUnsafeBytes { n in aad.withUnsafeBytes { a in plaintext.withUnsafeBytes { p in
                ours.withUnsafeMutableBytes { o in ourMIC.withUnsafeMutableBytes { m in
                    BluetoothCrypto.aesCCMEncrypt(key: k, nonce: n, associatedData: a, plaintext: p, into: o, mic: m)
                } }
            } } } }
            let evpOK = hcigatt_aes_ccm_evp(1, key, nonce, aad, Int32(aadLength), plaintext, Int32(length), &evp, &evpMIC,
                                            Int32(micLength))
            #expect(ok && evpOK == 1)
            #expect(ours == evp && ourMIC == evpMIC, "round \(round): \(length) bytes, \(aadLength) AAD, M=\(micLength)")
            var back = [UInt8](repeating: 0, count: length)
            #expect(decrypt(key, nonce, aad, ours, ourMIC, into: &back) && back == plaintext)
        }
    }

    @Test func refusesBadArguments() {
        let key = [UInt8](repeating: 1, count: 16), nonce = [UInt8](repeating: 2, count: 13)
        var out = [UInt8](repeating: 0, count: 4)
        #expect(!decrypt(Array(key.prefix(15)), nonce, [], [1, 2, 3, 4], [0, 0, 0, 0], into: &out))
        #expect(!decrypt(key, Array(nonce.prefix(12)), [], [1, 2, 3, 4], [0, 0, 0, 0], into: &out))
        #expect(!decrypt(key, nonce, [], [1, 2, 3, 4], [0, 0, 0], into: &out), "an odd tag length")
        var short = [UInt8](repeating: 0, count: 3)
        #expect(!decrypt(key, nonce, [], [1, 2, 3, 4], [0, 0, 0, 0], into: &short), "an output shorter than the input")
    }

    func decrypt(_ key: [UInt8], _ nonce: [UInt8], _ aad: [UInt8], _ c: [UInt8], _ mic: [UInt8], into out: inout [UInt8]) -> Bool {
        key.withUnsafeBytes { k in nonce.withUnsafeBytes { n in aad.withUnsafeBytes { a in c.withUnsafeBytes { cb in
            mic.withUnsafeBytes { m in out.withUnsafeMutableBytes { o in
                BluetoothCrypto.aesCCMDecrypt(key: k, nonce: n, associatedData: a, ciphertext: cb, mic: m, into: o)
            } }
        } } } }
    }
}
