import COpenSSLReference
import Testing
@testable import BluetoothCrypto

/// The proxy's Noise primitives on BearSSL: the RFCs' vectors, and agreement with OpenSSL's
/// EVP on random inputs (an independent implementation).
@Suite struct NoisePrimitivesTests {
    @Test("X25519: RFC 7748 §5.2 and the §6.1 Diffie-Hellman vectors")
    func x25519Vectors() throws {
        #expect(BluetoothCrypto.x25519(scalar: hexBytes("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4"),
                                       point: hexBytes("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c"))
            == hexBytes("c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"))
        let alice = hexBytes("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
        let bob = hexBytes("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
        let alicePublic = try #require(BluetoothCrypto.x25519PublicKey(alice))
        let bobPublic = try #require(BluetoothCrypto.x25519PublicKey(bob))
        #expect(alicePublic == hexBytes("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"))
        #expect(bobPublic == hexBytes("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"))
        let shared = hexBytes("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742")
        #expect(BluetoothCrypto.x25519(scalar: alice, point: bobPublic) == shared)
        #expect(BluetoothCrypto.x25519(scalar: bob, point: alicePublic) == shared)
    }

    @Test("X25519: a small-order point gives all zeros and is refused")
    func x25519RefusesSmallOrderPoints() {
        let scalar = BluetoothCrypto.randomBytes(32)
        #expect(BluetoothCrypto.x25519(scalar: scalar, point: [UInt8](repeating: 0, count: 32)) == nil)
        #expect(BluetoothCrypto.x25519(scalar: scalar, point: [1] + [UInt8](repeating: 0, count: 31)) == nil)
        #expect(BluetoothCrypto.x25519(scalar: scalar, point: [1, 2]) == nil, "wrong length")
    }

    @Test func x25519AgreesWithEVPOnRandomInputs() {
        for _ in 0 ..< 100 {
            let scalar = BluetoothCrypto.randomBytes(32), point = BluetoothCrypto.randomBytes(32)
            var reference = [UInt8](repeating: 0, count: 32)
            let ok = scalar.withUnsafeBufferPointer { s in point.withUnsafeBufferPointer { p in
                reference.withUnsafeMutableBufferPointer { hcigatt_x25519_evp(s.baseAddress, p.baseAddress, $0.baseAddress) }
            } }
            #expect(ok == 1)
            #expect(BluetoothCrypto.x25519(scalar: scalar, point: point) == reference)
        }
    }

    @Test("ChaCha20-Poly1305: RFC 8439 §2.8.2, and every flipped bit refused")
    func chaChaPolyVector() throws {
        let key = (0x80 ... 0x9F).map { UInt8($0) }
        let nonce = hexBytes("070000004041424344454647")
        let aad = hexBytes("50515253c0c1c2c3c4c5c6c7")
        let text = Array("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".utf8)
        let sealed = BluetoothCrypto.chaChaPolySeal(key: key, nonce: nonce, associatedData: aad, plaintext: text)
        #expect(Array(sealed.prefix(16)) == hexBytes("d31a8d34648e60db7b86afbc53ef7ec2"))
        #expect(Array(sealed.suffix(16)) == hexBytes("1ae10b594f09e26a7e902ecbd0600691"))
        #expect(BluetoothCrypto.chaChaPolyOpen(key: key, nonce: nonce, associatedData: aad, sealed: sealed) == text)
        for i in stride(from: 0, to: sealed.count, by: 7) {
            var bad = sealed
            bad[i] ^= 0x04
            #expect(BluetoothCrypto.chaChaPolyOpen(key: key, nonce: nonce, associatedData: aad, sealed: bad) == nil)
        }
        #expect(BluetoothCrypto.chaChaPolyOpen(key: key, nonce: nonce, associatedData: [1], sealed: sealed) == nil, "other associated data")
        #expect(BluetoothCrypto.chaChaPolyOpen(key: key, nonce: nonce, sealed: Array(sealed.prefix(15))) == nil, "shorter than a tag")
    }

    @Test func chaChaPolyAgreesWithEVPOnRandomInputs() {
        for round in 0 ..< 200 {
            let key = BluetoothCrypto.randomBytes(32), nonce = BluetoothCrypto.randomBytes(12)
            let text = BluetoothCrypto.randomBytes(round % 3 == 0 ? 0 : round * 7 % 600)
            let aad = BluetoothCrypto.randomBytes([0, 0, 1, 32][round % 4])
            var out = [UInt8](repeating: 0, count: text.count + 16), tag = [UInt8](repeating: 0, count: 16)
            let ok = key.withUnsafeBufferPointer { k in nonce.withUnsafeBufferPointer { n in aad.withUnsafeBufferPointer { a in
                text.withUnsafeBufferPointer { t in out.withUnsafeMutableBufferPointer { o in tag.withUnsafeMutableBufferPointer { g in
                    hcigatt_chachapoly_seal_evp(k.baseAddress, n.baseAddress, a.baseAddress, Int32(a.count), t.baseAddress, Int32(t.count),
                                                o.baseAddress, g.baseAddress)
                } } }
            } } }
            #expect(ok == 1)
            #expect(BluetoothCrypto.chaChaPolySeal(key: key, nonce: nonce, associatedData: aad, plaintext: text) == Array(out.prefix(text.count)) + tag)
        }
    }

    @Test("HMAC-SHA256: RFC 4231 test cases 1 and 2; SHA-256 of \"abc\"")
    func hmacVectors() {
        #expect(BluetoothCrypto.hmacSHA256(key: [UInt8](repeating: 0x0b, count: 20), data: Array("Hi There".utf8))
            == hexBytes("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"))
        #expect(BluetoothCrypto.hmacSHA256(key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))
            == hexBytes("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
        #expect(BluetoothCrypto.sha256(Array("abc".utf8)) == hexBytes("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
    }
}
