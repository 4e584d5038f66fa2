import FakeController
import Testing
@testable import BluetoothHost
import BluetoothWire

@Suite struct ControllerInitializerTests {
    let fullSequence: [HCIOpcode] = [.reset, .readLocalVersionInformation, .readBDADDR, .readLocalSupportedCommands,
                                     .readLocalSupportedFeatures, .leReadLocalSupportedFeatures, .leReadBufferSizeV2,
                                     .setEventMask, .leSetEventMask]

    @Test func v2SupportedUsesV2() throws {
        let (result, sent) = runInit(FakeControllerModel())
        let info = try result.get()
        #expect(sent == fullSequence)
        #expect(info.bufferSizeSource == 2)
        #expect(info.aclBufferLength == 251)
        #expect(info.aclBufferCount == 12)
        #expect(info.isoBuffer == nil)
        #expect(info.address == BluetoothAddress(0x11, 0x22, 0x33, 0x44, 0x55, 0x66))
        #expect(info.hciVersion.rawValue == 0x0C)
        #expect(info.hciRevision == 0x1234)
        #expect(info.manufacturer == 0x05F1)
        #expect(info.manufacturerName == "The Linux Foundation")
        #expect(info.lmpSubversion == 0x42)
        #expect(info.features == 1 << 38)
        #expect(info.leFeatures.contains(.leExtendedAdvertising))
        #expect(info.supportsExtendedScanning)
    }

    @Test("Data Length Extension and 2M/Coded: the longest data length suggested, every PHY allowed; refusals tolerated")
    func linkDefaultsForDataLengthAndPHY() throws {
        var model = FakeControllerModel()
        model.leFeatures = [.leEncryption, .leDataPacketLengthExtension, .le2MPHY]
        var (result, sent) = runInit(model)
        var info = try result.get()
        #expect(sent == Array(fullSequence.dropLast(2)) + [.leReadMaximumDataLength, .leWriteSuggestedDefaultDataLength,
                                                         .leSetDefaultPHY, .setEventMask, .leSetEventMask])
        #expect(info.maximumDataLength == LEDataLength(txOctets: 251, txTime: 17040, rxOctets: 251, rxTime: 17040))
        #expect(info.supportedPHYs == [.le1M, .le2M])
        // A controller that claims the features and refuses the commands still initialises.
        model.failing = [.leReadMaximumDataLength: .unknownHCICommand, .leSetDefaultPHY: .unsupportedFeatureOrParameterValue]
        model.leFeatures.insert(.leCodedPHY)
        (result, sent) = runInit(model)
        info = try result.get()
        #expect(info.maximumDataLength == nil && info.supportedPHYs == [.le1M, .le2M, .leCoded])
        #expect(!sent.contains(.leWriteSuggestedDefaultDataLength) && sent.suffix(3) == [.leSetDefaultPHY, .setEventMask, .leSetEventMask])
        // Neither feature: neither command.
        (result, sent) = runInit(FakeControllerModel())
        #expect(sent == fullSequence)
    }

    @Test func v2UnknownFallsBackToV1() throws {
        var model = FakeControllerModel()
        model.v2Unknown = true
        let (result, sent) = runInit(model)
        let info = try result.get()
        #expect(sent == [.reset, .readLocalVersionInformation, .readBDADDR, .readLocalSupportedCommands,
                         .readLocalSupportedFeatures, .leReadLocalSupportedFeatures, .leReadBufferSizeV2,
                         .leReadBufferSizeV1, .setEventMask, .leSetEventMask])
        #expect(info.bufferSizeSource == 1)
        #expect(info.aclBufferLength == 251)
    }

    @Test func v2TimeoutFallsBackToV1() throws {
        var model = FakeControllerModel()
        model.silent = [.leReadBufferSizeV2]
        let (result, sent) = runInit(model)
        #expect(try result.get().bufferSizeSource == 1)
        #expect(sent.contains(.leReadBufferSizeV1))
    }

    @Test func v2NotClaimedGoesStraightToV1() throws {
        var model = FakeControllerModel()
        model.supportedCommandBits = [(37, 5)]
        let (result, sent) = runInit(model)
        #expect(try result.get().bufferSizeSource == 1)
        #expect(!sent.contains(.leReadBufferSizeV2))
    }

    @Test func zeroLEBuffersUseReadBufferSize() throws {
        var model = FakeControllerModel()
        model.leACLLength = 0
        model.leACLCount = 0
        let (result, sent) = runInit(model)
        let info = try result.get()
        #expect(sent.contains(.readBufferSize))
        #expect(info.bufferSizeSource == 0)
        #expect(info.aclBufferLength == 1021)
        #expect(info.aclBufferCount == 8)
    }

    @Test("LE buffers too small for an LE packet: the shared ones; none usable at all: a clear failure (found by fuzzing)")
    func unusableBuffersFail() throws {
        var model = FakeControllerModel()
        model.leACLLength = 20
        var (result, sent) = runInit(model)
        let shared = try result.get().aclBufferLength
        #expect(sent.contains(.readBufferSize) && shared == 1021)
        model.sharedACLLength = 0
        (result, sent) = runInit(model)
        #expect(throws: HostError.self) { try result.get() }
        if case .failure(let e) = result { #expect(e.message.contains("no usable ACL buffers (8 of 0 bytes)")) }
        model.sharedACLLength = 251
        model.sharedACLCount = 0
        (result, _) = runInit(model)
        #expect(throws: HostError.self) { try result.get() }
    }

    @Test func extendedScanningNeedsBothBits() throws {
        var featureOnly = FakeControllerModel()
        featureOnly.supportedCommandBits = [(41, 5)]
        #expect(try runInit(featureOnly).0.get().supportsExtendedScanning == false)

        var commandOnly = FakeControllerModel()
        commandOnly.leFeatures = [.leEncryption]
        #expect(try runInit(commandOnly).0.get().supportsExtendedScanning == false)

        #expect(try runInit(FakeControllerModel()).0.get().supportsExtendedScanning)
    }

    @Test func resetTimeoutFailsWithAClearMessage() {
        var model = FakeControllerModel()
        model.silent = [.reset]
        let (result, sent) = runInit(model)
        #expect(sent == [.reset])
        guard case .failure(let e) = result else { Issue.record("expected failure"); return }
        #expect(e.kind == .commandTimeout)
        #expect(e.message.contains("HCI_Reset (0x0C03)"))
    }

    @Test func eventMasksEnableTheSubeventsTheStackUses() {
        let m = ControllerInitializer.leEventMask
        for bit: LEEventMask in [.extendedAdvertisingReport, .enhancedConnectionComplete, .dataLengthChange,
                                 .phyUpdateComplete, .longTermKeyRequest, .remoteConnectionParameterRequest,
                                 .channelSelectionAlgorithm, .advertisingReport] {
            #expect(m.contains(bit))
        }
        #expect(ControllerInitializer.eventMask.contains(.leMeta))
    }
}
