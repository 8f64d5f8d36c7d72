//! PyPI: PEP 440 versions and specifiers, PEP 508 requirements and markers, PEP 425 wheel tags.
