import Testing
@testable import BluetoothGATT
