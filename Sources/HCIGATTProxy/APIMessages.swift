// The messages of the ESPHome native API a Bluetooth proxy speaks, as our own table: type
// ids and field numbers are facts of the protocol (api.proto as aioesphomeapi 46.23 ships
// it, matching ESPHome 2026.10's generated code); the codec is written here.

/// Message type ids (api.proto `option (id)`).
enum APIMessageType {
    static let helloRequest: UInt16 = 1
    static let helloResponse: UInt16 = 2
    static let authenticationRequest: UInt16 = 3
    static let authenticationResponse: UInt16 = 4
    static let disconnectRequest: UInt16 = 5
    static let disconnectResponse: UInt16 = 6
    static let pingRequest: UInt16 = 7
    static let pingResponse: UInt16 = 8
    static let deviceInfoRequest: UInt16 = 9
    static let deviceInfoResponse: UInt16 = 10
    static let listEntitiesRequest: UInt16 = 11
    static let listEntitiesDoneResponse: UInt16 = 19
    static let subscribeStatesRequest: UInt16 = 20
    static let subscribeLogsRequest: UInt16 = 28
    static let subscribeHomeassistantServicesRequest: UInt16 = 34
    static let getTimeResponse: UInt16 = 37
    static let subscribeHomeAssistantStatesRequest: UInt16 = 38
    static let homeAssistantStateResponse: UInt16 = 40
    static let subscribeBluetoothLEAdvertisementsRequest: UInt16 = 66
    static let bluetoothDeviceRequest: UInt16 = 68
    static let bluetoothDeviceConnectionResponse: UInt16 = 69
    static let bluetoothGATTGetServicesRequest: UInt16 = 70
    static let bluetoothGATTGetServicesResponse: UInt16 = 71
    static let bluetoothGATTGetServicesDoneResponse: UInt16 = 72
    static let bluetoothGATTReadRequest: UInt16 = 73
    static let bluetoothGATTReadResponse: UInt16 = 74
    static let bluetoothGATTWriteRequest: UInt16 = 75
    static let bluetoothGATTReadDescriptorRequest: UInt16 = 76
    static let bluetoothGATTWriteDescriptorRequest: UInt16 = 77
    static let bluetoothGATTNotifyRequest: UInt16 = 78
    static let bluetoothGATTNotifyDataResponse: UInt16 = 79
    static let subscribeBluetoothConnectionsFreeRequest: UInt16 = 80
    static let bluetoothConnectionsFreeResponse: UInt16 = 81
    static let bluetoothGATTErrorResponse: UInt16 = 82
    static let bluetoothGATTWriteResponse: UInt16 = 83
    static let bluetoothGATTNotifyResponse: UInt16 = 84
    static let bluetoothDevicePairingResponse: UInt16 = 85
    static let bluetoothDeviceUnpairingResponse: UInt16 = 86
    static let unsubscribeBluetoothLEAdvertisementsRequest: UInt16 = 87
    static let bluetoothDeviceClearCacheResponse: UInt16 = 88
    static let bluetoothLERawAdvertisementsResponse: UInt16 = 93
    static let noiseEncryptionSetKeyRequest: UInt16 = 124
    static let noiseEncryptionSetKeyResponse: UInt16 = 125
    static let bluetoothScannerStateResponse: UInt16 = 126
    static let bluetoothScannerSetModeRequest: UInt16 = 127
    static let bluetoothSetConnectionParamsRequest: UInt16 = 145
    static let bluetoothSetConnectionParamsResponse: UInt16 = 146
}

/// `BluetoothProxyFeature`: what DeviceInfoResponse says the proxy does.
struct BluetoothProxyFeatures: OptionSet, Sendable, Hashable {
    let rawValue: UInt32
    init(rawValue: UInt32) { self.rawValue = rawValue }
    static let passiveScan = Self(rawValue: 1 << 0)
    static let activeConnections = Self(rawValue: 1 << 1)
    /// Required by clients for connections: the client keeps the database and writes CCCDs.
    static let remoteCaching = Self(rawValue: 1 << 2)
    static let pairing = Self(rawValue: 1 << 3)
    static let cacheClearing = Self(rawValue: 1 << 4)
    static let rawAdvertisements = Self(rawValue: 1 << 5)
    static let stateAndMode = Self(rawValue: 1 << 6)
    static let connectionParams = Self(rawValue: 1 << 7)
}

/// `BluetoothDeviceRequestType`.
enum BluetoothDeviceRequestKind: Sendable, Equatable {
    case connectV1, disconnect, pair, unpair, connectWithCache, connectWithoutCache, clearCache
    case unknown(UInt32)

    init(_ v: UInt32) {
        switch v {
        case 0: self = .connectV1
        case 1: self = .disconnect
        case 2: self = .pair
        case 3: self = .unpair
        case 4: self = .connectWithCache
        case 5: self = .connectWithoutCache
        case 6: self = .clearCache
        default: self = .unknown(v)
        }
    }
}

extension APIRequest {
    /// The device a request is about; nil for the radio's own.
    var address: UInt64? {
        switch self {
        case .device(let a, _, _), .getServices(let a), .read(let a, _), .readDescriptor(let a, _), .write(let a, _, _, _),
             .writeDescriptor(let a, _, _), .notify(let a, _, _), .setConnectionParams(let a, _, _, _, _):
            a
        case .subscribeAdvertisements, .unsubscribeAdvertisements, .subscribeConnectionsFree, .setScannerMode, .setNoiseKey:
            nil
        }
    }
}

/// What a client asks of the proxy's radio (the session answers the rest itself).
enum APIRequest: Sendable, Equatable {
    /// SubscribeBluetoothLEAdvertisementsRequest (flags bit 0: raw advertisements).
    case subscribeAdvertisements(flags: UInt32)
    case unsubscribeAdvertisements
    case subscribeConnectionsFree
    /// BluetoothDeviceRequest; `addressType` nil when the client sent none.
    case device(address: UInt64, kind: BluetoothDeviceRequestKind, addressType: UInt8?)
    case getServices(address: UInt64)
    case read(address: UInt64, handle: UInt16)
    case readDescriptor(address: UInt64, handle: UInt16)
    case write(address: UInt64, handle: UInt16, data: [UInt8], withResponse: Bool)
    case writeDescriptor(address: UInt64, handle: UInt16, data: [UInt8])
    case notify(address: UInt64, handle: UInt16, enable: Bool)
    /// BluetoothScannerSetModeRequest: active (else passive).
    case setScannerMode(active: Bool)
    /// BluetoothSetConnectionParamsRequest, in the Core's units (1.25 ms, 10 ms).
    case setConnectionParams(address: UInt64, minInterval: UInt16, maxInterval: UInt16, latency: UInt16, timeout: UInt16)
    /// NoiseEncryptionSetKeyRequest over an encrypted session: the new key (32 bytes), or
    /// nil to clear it. The runtime answers with ``APIResponse/noiseKeySet(success:)``.
    case setNoiseKey([UInt8]?)
}

/// A raw advertisement as the proxy forwards it.
struct APIRawAdvertisement: Sendable, Equatable {
    /// The address as written (AA:BB:… → 0xAABB…).
    var address: UInt64
    var rssi: Int8
    /// HCI LE address type: 0 public, 1 random, 2/3 resolved identities.
    var addressType: UInt8
    /// Advertising data followed by the scan response data.
    var data: [UInt8]
    init(address: UInt64, rssi: Int8, addressType: UInt8, data: [UInt8]) {
        self.address = address
        self.rssi = rssi
        self.addressType = addressType
        self.data = data
    }

    /// The encoded size of this advertisement as one element of the batch.
    var encodedSize: Int {
        var n = 1 + ProtoWriter.varintSize(address)
        if rssi != 0 { n += 1 + ProtoWriter.varintSize(UInt64(UInt32(bitPattern: (Int32(rssi) << 1) ^ (Int32(rssi) >> 31)))) }
        if addressType != 0 { n += 2 }
        if !data.isEmpty { n += 1 + ProtoWriter.varintSize(UInt64(data.count)) + data.count }
        return n
    }
}

/// A GATT UUID as the API carries it: 16/32-bit ones as `short_uuid` for clients of API
/// 1.12 and later, else two 64-bit words (most significant first).
struct APIUUID: Sendable, Equatable {
    var high: UInt64
    var low: UInt64
    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The 16- or 32-bit value when this is a SIG UUID on the Base UUID.
    var short: UInt32? {
        // 0 would be no UUID at all to the client: the long form then.
        guard low == 0x8000_0080_5F9B_34FB, high & 0xFFFF_FFFF == 0x0000_1000, high >> 32 != 0 else { return nil }
        return UInt32(truncatingIfNeeded: high >> 32)
    }

    var words: [UInt64] { [high, low] }

    func write(_ w: inout ProtoWriter, words wordsField: UInt32, short shortField: UInt32, shortAllowed: Bool) {
        if shortAllowed, let s = short {
            w.uint(shortField, s)
        } else {
            // Unpacked, as ESPHome writes it.
            for v in words {
                w.key(wordsField, 0)
                w.rawVarint(v)
            }
        }
    }
}

/// A service of the database the proxy sends, with its characteristics and descriptors.
struct APIGATTService: Sendable, Equatable {
    struct Descriptor: Sendable, Equatable {
        var uuid: APIUUID
        var handle: UInt16
        init(uuid: APIUUID, handle: UInt16) {
            self.uuid = uuid
            self.handle = handle
        }
    }

    struct Characteristic: Sendable, Equatable {
        var uuid: APIUUID
        /// The value handle.
        var handle: UInt16
        var properties: UInt8
        var descriptors: [Descriptor]
        init(uuid: APIUUID, handle: UInt16, properties: UInt8, descriptors: [Descriptor]) {
            self.uuid = uuid
            self.handle = handle
            self.properties = properties
            self.descriptors = descriptors
        }
    }

    var uuid: APIUUID
    /// The start handle.
    var handle: UInt16
    var characteristics: [Characteristic]
    init(uuid: APIUUID, handle: UInt16, characteristics: [Characteristic]) {
        self.uuid = uuid
        self.handle = handle
        self.characteristics = characteristics
    }

    func write(_ w: inout ProtoWriter, short: Bool) {
        uuid.write(&w, words: 1, short: 4, shortAllowed: short)
        w.uint(2, UInt32(handle))
        for c in characteristics {
            w.message(3) { cw in
                c.uuid.write(&cw, words: 1, short: 5, shortAllowed: short)
                cw.uint(2, UInt32(c.handle))
                cw.uint(3, UInt32(c.properties))
                for d in c.descriptors {
                    cw.message(4) { dw in
                        d.uuid.write(&dw, words: 1, short: 3, shortAllowed: short)
                        dw.uint(2, UInt32(d.handle))
                    }
                }
            }
        }
    }
}

/// `BluetoothScannerState`.
enum APIScannerState: UInt32, Sendable {
    case idle = 0, starting, running, failed, stopping, stopped
}

/// What the proxy sends a client.
enum APIResponse: Sendable, Equatable {
    case rawAdvertisements([APIRawAdvertisement])
    case connectionsFree(free: UInt32, limit: UInt32, allocated: [UInt64])
    /// `error`: an HCI reason code (the client's table), or an ATT error.
    case deviceConnection(address: UInt64, connected: Bool, mtu: UInt32, error: Int32)
    /// Some services of the database (one message of a batch); `short`: 16/32-bit UUIDs as
    /// `short_uuid` (clients of API 1.12 and later).
    case services(address: UInt64, [APIGATTService])
    case servicesDone(address: UInt64)
    case read(address: UInt64, handle: UInt16, data: [UInt8])
    case wrote(address: UInt64, handle: UInt16)
    case notifying(address: UInt64, handle: UInt16)
    case notification(address: UInt64, handle: UInt16, data: [UInt8])
    /// `error`: the ATT error code, or -1 when not connected.
    case gattError(address: UInt64, handle: UInt16, error: Int32)
    case pairing(address: UInt64, paired: Bool, error: Int32)
    case unpairing(address: UInt64, success: Bool, error: Int32)
    case cacheCleared(address: UInt64, success: Bool, error: Int32)
    case scannerState(APIScannerState, active: Bool, configuredActive: Bool)
    case connectionParams(address: UInt64, error: Int32)
    case noiseKeySet(success: Bool)

    /// The message, for a client of API minor version `clientMinor`.
    func message(clientMinor: UInt32) -> APIMessage {
        var w = ProtoWriter()
        let type: UInt16
        switch self {
        case .rawAdvertisements(let ads):
            type = APIMessageType.bluetoothLERawAdvertisementsResponse
            w.bytes.reserveCapacity(ads.reduce(0) { $0 + $1.encodedSize + 2 })
            for a in ads {
                w.key(1, 2)
                w.rawVarint(UInt64(a.encodedSize))
                // The address always (ESPHome does, even when 0).
                w.key(1, 0)
                w.rawVarint(a.address)
                w.sint32(2, Int32(a.rssi))
                w.uint(3, UInt32(a.addressType))
                w.bytes(4, a.data)
            }
        case .connectionsFree(let free, let limit, let allocated):
            type = APIMessageType.bluetoothConnectionsFreeResponse
            w.uint(1, free)
            w.uint(2, limit)
            for a in allocated where a != 0 {
                w.key(3, 0)
                w.rawVarint(a)
            }
        case .deviceConnection(let address, let connected, let mtu, let error):
            type = APIMessageType.bluetoothDeviceConnectionResponse
            w.uint(1, address)
            w.bool(2, connected)
            w.uint(3, mtu)
            w.int32(4, error)
        case .services(let address, let services):
            type = APIMessageType.bluetoothGATTGetServicesResponse
            w.uint(1, address)
            for s in services { w.message(2) { s.write(&$0, short: clientMinor >= 12) } }
        case .servicesDone(let address):
            type = APIMessageType.bluetoothGATTGetServicesDoneResponse
            w.uint(1, address)
        case .read(let address, let handle, let data):
            type = APIMessageType.bluetoothGATTReadResponse
            w.uint(1, address)
            w.uint(2, UInt32(handle))
            w.bytes(3, data)
        case .wrote(let address, let handle):
            type = APIMessageType.bluetoothGATTWriteResponse
            w.uint(1, address)
            w.uint(2, UInt32(handle))
        case .notifying(let address, let handle):
            type = APIMessageType.bluetoothGATTNotifyResponse
            w.uint(1, address)
            w.uint(2, UInt32(handle))
        case .notification(let address, let handle, let data):
            type = APIMessageType.bluetoothGATTNotifyDataResponse
            w.uint(1, address)
            w.uint(2, UInt32(handle))
            w.bytes(3, data)
        case .gattError(let address, let handle, let error):
            type = APIMessageType.bluetoothGATTErrorResponse
            w.uint(1, address)
            w.uint(2, UInt32(handle))
            w.int32(3, error)
        case .pairing(let address, let paired, let error):
            type = APIMessageType.bluetoothDevicePairingResponse
            w.uint(1, address)
            w.bool(2, paired)
            w.int32(3, error)
        case .unpairing(let address, let success, let error):
            type = APIMessageType.bluetoothDeviceUnpairingResponse
            w.uint(1, address)
            w.bool(2, success)
            w.int32(3, error)
        case .cacheCleared(let address, let success, let error):
            type = APIMessageType.bluetoothDeviceClearCacheResponse
            w.uint(1, address)
            w.bool(2, success)
            w.int32(3, error)
        case .scannerState(let state, let active, let configured):
            type = APIMessageType.bluetoothScannerStateResponse
            w.uint(1, state.rawValue)
            w.bool(2, active)
            w.bool(3, configured)
        case .connectionParams(let address, let error):
            type = APIMessageType.bluetoothSetConnectionParamsResponse
            w.uint(1, address)
            w.int32(2, error)
        case .noiseKeySet(let success):
            type = APIMessageType.noiseEncryptionSetKeyResponse
            w.bool(1, success)
        }
        return APIMessage(type, w.bytes)
    }
}

extension APIRequest {
    /// The request in a client's message; nil for a type the proxy does not act on (the
    /// session answers those it must).
    static func decode(_ m: APIMessage) throws(ProtoError) -> APIRequest? {
        var r = ProtoReader(m.payload)
        var address: UInt64 = 0, handle: UInt32 = 0, flag = false, data: [UInt8] = [], number: UInt32 = 0
        var hasAddressType = false, addressType: UInt32 = 0
        var params: [UInt32] = [0, 0, 0, 0]
        while let (f, v) = try r.next() {
            switch (m.type, f) {
            case (APIMessageType.subscribeBluetoothLEAdvertisementsRequest, 1), (APIMessageType.bluetoothScannerSetModeRequest, 1):
                number = try r.uint32(v, f)
            case (APIMessageType.noiseEncryptionSetKeyRequest, 1):
                data = try r.data(v, f)
            case (_, 1):
                address = try r.uint(v, f)
            case (APIMessageType.bluetoothDeviceRequest, 2):
                number = try r.uint32(v, f)
            case (APIMessageType.bluetoothDeviceRequest, 3):
                hasAddressType = try r.bool(v, f)
            case (APIMessageType.bluetoothDeviceRequest, 4):
                addressType = try r.uint32(v, f)
            case (APIMessageType.bluetoothSetConnectionParamsRequest, 2 ... 5):
                params[Int(f) - 2] = try r.uint32(v, f)
            case (_, 2):
                handle = try r.uint32(v, f)
            case (APIMessageType.bluetoothGATTWriteRequest, 3), (APIMessageType.bluetoothGATTNotifyRequest, 3):
                flag = try r.bool(v, f)
            case (APIMessageType.bluetoothGATTWriteRequest, 4), (APIMessageType.bluetoothGATTWriteDescriptorRequest, 3):
                data = try r.data(v, f)
            default:
                continue
            }
        }
        let h = UInt16(truncatingIfNeeded: handle)
        func u16(_ x: UInt32) -> UInt16 { UInt16(clamping: x) }
        switch m.type {
        case APIMessageType.subscribeBluetoothLEAdvertisementsRequest: return .subscribeAdvertisements(flags: number)
        case APIMessageType.unsubscribeBluetoothLEAdvertisementsRequest: return .unsubscribeAdvertisements
        case APIMessageType.subscribeBluetoothConnectionsFreeRequest: return .subscribeConnectionsFree
        case APIMessageType.bluetoothDeviceRequest:
            return .device(address: address, kind: BluetoothDeviceRequestKind(number),
                           addressType: hasAddressType ? UInt8(truncatingIfNeeded: addressType) : nil)
        case APIMessageType.bluetoothGATTGetServicesRequest: return .getServices(address: address)
        case APIMessageType.bluetoothGATTReadRequest: return .read(address: address, handle: h)
        case APIMessageType.bluetoothGATTReadDescriptorRequest: return .readDescriptor(address: address, handle: h)
        case APIMessageType.bluetoothGATTWriteRequest: return .write(address: address, handle: h, data: data, withResponse: flag)
        case APIMessageType.bluetoothGATTWriteDescriptorRequest: return .writeDescriptor(address: address, handle: h, data: data)
        case APIMessageType.bluetoothGATTNotifyRequest: return .notify(address: address, handle: h, enable: flag)
        case APIMessageType.bluetoothScannerSetModeRequest: return .setScannerMode(active: number == 1)
        case APIMessageType.bluetoothSetConnectionParamsRequest:
            return .setConnectionParams(address: address, minInterval: u16(params[0]), maxInterval: u16(params[1]),
                                        latency: u16(params[2]), timeout: u16(params[3]))
        case APIMessageType.noiseEncryptionSetKeyRequest:
            if data.isEmpty { return .setNoiseKey(nil) }
            guard let key = Base64.decode(data), key.count == 32 else { return .setNoiseKey([]) }
            return .setNoiseKey(key)
        default: return nil
        }
    }
}
