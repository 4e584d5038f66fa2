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
}
