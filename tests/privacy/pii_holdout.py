"""A second labelled set, written after the detectors were tuned on ``pii_cases`` and never
used to tune them: its scores are the honest estimate (reported, see test_pii.py)."""

from __future__ import annotations

from .pii_cases import Case

HOLDOUT: list[Case] = [
    ("Forward it to maria.garcia@univ.edu.es please", {"EMAIL": ["maria.garcia@univ.edu.es"]}),
    ("新邮箱 zhao_lei2024@outlook.com 旧的停用了", {"EMAIL": ["zhao_lei2024@outlook.com"]}),
    ("ops-team@infra.example.net owns the pager", {"EMAIL": ["ops-team@infra.example.net"]}),
    ("Write to HR@Example.COM", {"EMAIL": ["HR@Example.COM"]}),
    ("pip install requests==2.31.0 then import it", {}),
    (
        "docker pull nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31",
        {},
    ),
    ("微信同号 15800001234", {"PHONE": ["15800001234"]}),
    ("座机不用，打 +86-135-1234-5678", {"PHONE": ["+86-135-1234-5678"]}),
    ("Sydney +61 2 9374 4000", {"PHONE": ["+61 2 9374 4000"]}),
    ("call me at 646-555-0147 tonight", {"PHONE": ["646-555-0147"]}),
    ("Seoul +82 2-312-3456", {"PHONE": ["+82 2-312-3456"]}),
    ("the score was 3-2 and 110-98 in overtime", {}),
    ("房间号 1503，楼层 15", {}),
    ("population 1400000000 people", {}),
    ("卡号 4000 0566 5566 5556 的那张卡丢了", {"CARD": ["4000 0566 5566 5556"]}),
    ("Use 5105 1051 0510 5100 for the test", {"CARD": ["5105 1051 0510 5100"]}),
    ("amex 3782-822463-10005", {"CARD": ["3782-822463-10005"]}),
    ("PO number 4532015112830366", {}),
    ("phone bill 2023 total 4,532.15", {}),
    ("My SSN is 321-54-9876", {"SSN": ["321-54-9876"]}),
    ("SSN 601-32-8811 belongs to the applicant", {"SSN": ["601-32-8811"]}),
    ("dates 2024-01-15 and 2024-12-31", {}),
    ("他的身份证号是 350203198809091234 吗", {}),
    ("身份证：210102197305150013", {}),
    ("ID card 44030419900101123", {}),
    ("gateway 192.168.100.254 and dns 1.1.1.1", {"IP": ["192.168.100.254", "1.1.1.1"]}),
    ("IPv6 地址 2409:8a00:1::1 不通", {"IP": ["2409:8a00:1::1"]}),
    ("Release 4.19.0.1 fixes the bug", {}),
    ("ratio 1.5:2.5:3", {}),
    (
        "set GITHUB_TOKEN=ghp_aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6",
        {"SECRET": ["ghp_aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"]},
    ),
    ("密钥: 7Hq9Lx2Vb5Nw8Kz3Rt6Yp1Mc4", {"SECRET": ["7Hq9Lx2Vb5Nw8Kz3Rt6Yp1Mc4"]}),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        {"SECRET": ["wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"]},
    ),
    ("the tests in tests/integration/test_agent_hooks_e2e.py pass", {}),
    ("RFC 2616 section 14.9 explains caching", {}),
    ("git checkout a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0", {}),
]
