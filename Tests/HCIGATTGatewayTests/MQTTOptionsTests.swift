import Testing
@testable import HCIGATTGateway

@Suite struct MQTTOptionsTests {
    func options(_ uri: String, password: String?) -> MQTTOptions {
        var o = MQTTOptions(uri: uri, clientID: "t")
        o.username = "u"
        o.password = password
        return o
    }

    @Test func theBrokersHostFromItsURI() {
        #expect(options("mqtt://broker.lan:1883", password: nil).host == "broker.lan")
        #expect(options("mqtts://10.0.0.2", password: nil).host == "10.0.0.2")
        #expect(options("mqtt://[::1]:1883", password: nil).host == "::1")
        #expect(options("tcp://user@example.org:1883/", password: nil).host == "example.org")
    }

    @Test("A password over plain MQTT to another machine is warned about; TLS or this machine is not")
    func aPasswordInClearTextIsSaidOnce() {
        #expect(options("mqtt://broker.lan:1883", password: "secret").passwordInClear)
        #expect(options("tcp://192.168.1.5", password: "secret").passwordInClear)
        #expect(!options("mqtts://broker.lan", password: "secret").passwordInClear, "TLS")
        #expect(!options("ssl://broker.lan", password: "secret").passwordInClear, "TLS")
        #expect(!options("mqtt://127.0.0.1:1883", password: "secret").passwordInClear, "loopback")
        #expect(!options("mqtt://localhost", password: "secret").passwordInClear, "loopback")
        #expect(!options("mqtt://[::1]:1883", password: "secret").passwordInClear, "loopback")
        #expect(!options("mqtt://broker.lan", password: nil).passwordInClear && !options("mqtt://broker.lan", password: "").passwordInClear)
    }

    @Test("TLS rules: an IP literal needs no --no-hostname-check; no check only with a CA file or a pin")
    func tlsNameRules() {
        var ip = options("mqtts://127.0.0.1:8883", password: nil)
        #expect(ip.problem == nil, "checked against the certificate's IP names")
        #expect(ip.hostAddressBytes == [127, 0, 0, 1])
        ip.noHostnameCheck = true
        #expect(ip.problem?.contains("would take any public certificate") == true, "the system's CAs and no name check")
        ip.caFile = "/etc/ssl/ca.pem"
        #expect(ip.problem == nil)
        ip.caFile = nil
        ip.pinSHA256 = [UInt8](repeating: 1, count: 32)
        #expect(ip.problem == nil)
        var plain = options("mqtt://broker.lan", password: nil)
        plain.pinSHA256 = [UInt8](repeating: 1, count: 32)
        #expect(plain.problem?.contains("--pin-sha256 is for TLS") == true)
        #expect(options("mqtts://[::1]", password: nil).hostAddressBytes == [UInt8](repeating: 0, count: 15) + [1])
        #expect(options("mqtts://broker.lan", password: nil).hostAddressBytes == nil)
    }

    /// DER: tag, length, contents.
    func tlv(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
        let n = contents.count
        if n < 0x80 { return [tag, UInt8(n)] + contents }
        if n < 0x100 { return [tag, 0x81, UInt8(n)] + contents }
        return [tag, 0x82, UInt8(n >> 8), UInt8(n & 0xFF)] + contents
    }

    /// A certificate's shape with a subjectAltName of `names` (what the reader walks).
    func certificate(names: [[UInt8]], padding: Int = 0) -> [UInt8] {
        let san = tlv(0x30, tlv(0x06, [0x55, 0x1D, 0x11]) + tlv(0x04, tlv(0x30, names.flatMap { $0 })))
        let other = tlv(0x30, tlv(0x06, [0x55, 0x1D, 0x13]) + tlv(0x01, [0xFF]) + tlv(0x04, tlv(0x30, [])))
        let tbs = tlv(0x30, tlv(0xA0, tlv(0x02, [2])) + tlv(0x02, [1]) + tlv(0x30, [UInt8](repeating: 0, count: padding))
                     + tlv(0xA3, tlv(0x30, other + san)))
        return tlv(0x30, tbs + tlv(0x30, []) + tlv(0x03, [0]))
    }

    @Test("The certificate's IP names: found among DNS names, none without the extension, malformed DER a typed error")
    func certificateIPNames() throws {
        let der = certificate(names: [tlv(0x82, Array("localhost".utf8)), tlv(0x87, [127, 0, 0, 1]),
                                      tlv(0x87, [UInt8](repeating: 0, count: 15) + [1])], padding: 300)
        let ips = try der.withUnsafeBytes { raw in try CertificateNames.ipAddresses(raw) }
        #expect(ips == [[127, 0, 0, 1], [UInt8](repeating: 0, count: 15) + [1]])
        let none = try certificate(names: [tlv(0x82, Array("a".utf8))]).withUnsafeBytes { try CertificateNames.ipAddresses($0) }
        #expect(none.isEmpty)
        // Every truncation, a length past the end, an iPAddress of 5 bytes: errors, no trap.
        for n in 0 ..< der.count {
            let cut = Array(der.prefix(n))
            #expect(throws: CertificateNames.Failure.self, "\(n) bytes") { try cut.withUnsafeBytes { try CertificateNames.ipAddresses($0) } }
        }
        let odd = certificate(names: [tlv(0x87, [1, 2, 3, 4, 5])])
        #expect { try odd.withUnsafeBytes { try CertificateNames.ipAddresses($0) } } throws: { e in
            "\(e)".contains("an iPAddress of 5 bytes")
        }
        #expect(throws: CertificateNames.Failure.self) { try [0x30, 0x84, 1, 0, 0, 0].withUnsafeBytes { try CertificateNames.ipAddresses($0) } }
    }
}
