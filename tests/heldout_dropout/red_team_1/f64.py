from conformance.implementations.reference.adapter import adapter_float64 as adapter
