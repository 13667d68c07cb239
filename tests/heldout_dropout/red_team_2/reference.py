from conformance.implementations.reference.adapter import adapter
