"""A labelled PII test set (English and Chinese), written for memstrata's redactor.

Each case is ``(text, {TYPE: [exact values]})``; an empty dict is a negative. Negatives are
the look-alikes a redactor must leave alone: order and tracking numbers, dates, times,
versions, prices, hashes and UUIDs in prose, package specifiers, handles. Card numbers are
the networks' published test numbers or Luhn-completed made-up ones; resident ids are made
up with a correct check digit. None of it is anyone's real data.
"""

from __future__ import annotations

Case = tuple[str, dict[str, list[str]]]

CASES: list[Case] = [
    # --- e-mail -----------------------------------------------------------------------
    ("Contact me at alice@example.com tomorrow.", {"EMAIL": ["alice@example.com"]}),
    (
        "My work address is bob.smith+news@mail.co.uk, personal is bob@smith.dev.",
        {"EMAIL": ["bob.smith+news@mail.co.uk", "bob@smith.dev"]},
    ),
    ("张三的邮箱是zhang.san@qq.com，请转发给他", {"EMAIL": ["zhang.san@qq.com"]}),
    ("请发到 wang.wei@163.com 谢谢", {"EMAIL": ["wang.wei@163.com"]}),
    ("Send the report to first_last@sub.domain.org.", {"EMAIL": ["first_last@sub.domain.org"]}),
    ("(reply-to: <support@acme-corp.io>)", {"EMAIL": ["support@acme-corp.io"]}),
    ("Emails: a.b@c.com; d-e@f.net", {"EMAIL": ["a.b@c.com", "d-e@f.net"]}),
    ("我的Gmail: li.ming.1990@gmail.com", {"EMAIL": ["li.ming.1990@gmail.com"]}),
    (
        "cc john.o'neil@example.com? no, cc jo_neil@example.com",
        {"EMAIL": ["john.o'neil@example.com", "jo_neil@example.com"]},
    ),
    ("联系人：陈静 chenjing@company.com.cn", {"EMAIL": ["chenjing@company.com.cn"]}),
    ("user42@mail.example.museum signed up", {"EMAIL": ["user42@mail.example.museum"]}),
    ("Ping @alice on Slack about the deploy", {}),
    ("npm install react@18.2.0 and @types/node@20.1.0", {}),
    ("Use the decorator @app.route('/x') in Flask", {}),
    ("We met @ the cafe at 3pm", {}),
    # --- phone ----------------------------------------------------------------------------
    ("我的手机号是13812345678，有事打给我", {"PHONE": ["13812345678"]}),
    ("手机：138 1234 5678", {"PHONE": ["138 1234 5678"]}),
    ("Call +86 139-0000-1234 when you land", {"PHONE": ["+86 139-0000-1234"]}),
    ("电话+8618600001111", {"PHONE": ["+8618600001111"]}),
    ("London office: +44 20 7946 0958", {"PHONE": ["+44 20 7946 0958"]}),
    ("Reach me on +1 (415) 555-0132 after 6", {"PHONE": ["+1 (415) 555-0132"]}),
    ("Berlin: +49 30 901820", {"PHONE": ["+49 30 901820"]}),
    ("Paris +33 1 42 68 53 00", {"PHONE": ["+33 1 42 68 53 00"]}),
    ("Tokyo +81 3-1234-5678", {"PHONE": ["+81 3-1234-5678"]}),
    ("Her number is (212) 555-0199.", {"PHONE": ["(212) 555-0199"]}),
    ("text 415-555-0132 or 415.555.0133", {"PHONE": ["415-555-0132", "415.555.0133"]}),
    ("India: +91 98765 43210", {"PHONE": ["+91 98765 43210"]}),
    ("老板的电话是 15912345678 和 17700001234", {"PHONE": ["15912345678", "17700001234"]}),
    ("订单号：13812345678 已发货", {}),
    ("The meeting is on 2023-05-08 at 12:30:45", {}),
    ("会议时间 2023年5月8日 14:00-15:30", {}),
    ("Revenue grew from 1,234,567 to 2,345,678 in 2019-2023", {}),
    ("ISBN 978-3-16-148410-0 is on the cover", {}),
    ("邮编 100084，价格 12800 元", {}),
    ("Tracking number 1Z999AA10123456784", {}),
    ("快递单号 SF1234567890123 预计明天到", {}),
    ("Zoom meeting ID 845 2931 0076", {}),
    ("build 20230508.1234 passed", {}),
    # --- payment cards ---------------------------------------------------------------------
    ("Card: 4111 1111 1111 1111 exp 12/27", {"CARD": ["4111 1111 1111 1111"]}),
    ("charge 5500-0000-0000-0004 please", {"CARD": ["5500-0000-0000-0004"]}),
    ("Amex 378282246310005 on file", {"CARD": ["378282246310005"]}),
    ("Discover 6011111111111117", {"CARD": ["6011111111111117"]}),
    ("我的银行卡号是 6222021001123456 7", {}),
    ("银行卡号：621700000000000006", {"CARD": ["621700000000000006"]}),
    ("工资卡 6214 8300 0012 3456 3", {"CARD": ["6214 8300 0012 3456 3"]}),
    ("JCB 3566 1111 2222 3337", {"CARD": ["3566 1111 2222 3337"]}),
    (
        "visa 4242424242424242 and mastercard 5555555555554444",
        {"CARD": ["4242424242424242", "5555555555554444"]},
    ),
    ("Diners 30569309025904", {"CARD": ["30569309025904"]}),
    ("MC 2223003122003222", {"CARD": ["2223003122003222"]}),
    ("new card 4000 1234 1234 1234", {"CARD": ["4000 1234 1234 1234"]}),
    ("order 4111111111111111 shipped", {}),
    ("Invoice no. 2023050812345678", {}),
    ("timestamp 1684540800000 in ms", {}),
    ("account 1234567812345678 (not a card)", {}),
    ("商品条码 6901234567892", {}),
    ("Transaction ID: 5500000000000004", {}),
    # --- SSN -------------------------------------------------------------------------------
    ("SSN 123-45-6789 on the form", {"SSN": ["123-45-6789"]}),
    ("his social is 078-05-1120", {"SSN": ["078-05-1120"]}),
    ("SSN: 219-09-9999.", {"SSN": ["219-09-9999"]}),
    ("ssn=457-55-5462", {"SSN": ["457-55-5462"]}),
    ("Employee 536-22-1184 joined", {"SSN": ["536-22-1184"]}),
    ("invalid 000-12-3456 and 666-12-3456 and 912-34-5678", {}),
    ("Part 123-45-6789 is back-ordered", {}),
    ("ISBN 0-306-40615-2", {}),
    ("from 2021-05-2023 to now", {}),
    # --- PRC resident id -------------------------------------------------------------------
    ("身份证号：11010519491231002X", {"CN_ID": ["11010519491231002X"]}),
    ("我的身份证是440304199001011233", {"CN_ID": ["440304199001011233"]}),
    ("ID 310115198511203010 verified", {"CN_ID": ["310115198511203010"]}),
    ("证件号码 51010719770615002x", {"CN_ID": ["51010719770615002x"]}),
    (
        "身份证 330102199203045678，手机 13900001234",
        {"CN_ID": ["330102199203045678"], "PHONE": ["13900001234"]},
    ),
    ("37020219881111222X 是他的证件号", {"CN_ID": ["37020219881111222X"]}),
    ("id=420106199502284510", {"CN_ID": ["420106199502284510"]}),
    ("身份证号码610113200002290177", {"CN_ID": ["610113200002290177"]}),
    ("身份证号 110105194912310021 校验位不对", {}),
    ("订单号：202305081234567890", {}),
    ("流水号 440304199013401234", {}),
    # --- IP addresses ----------------------------------------------------------------------
    ("ssh into 192.168.1.10 then 10.0.0.1", {"IP": ["192.168.1.10", "10.0.0.1"]}),
    ("DNS 8.8.8.8.", {"IP": ["8.8.8.8"]}),
    ("服务器IP是10.1.2.3，端口8080", {"IP": ["10.1.2.3"]}),
    ("v6: 2001:db8::1 and fe80::1", {"IP": ["2001:db8::1", "fe80::1"]}),
    (
        "full 2001:0db8:85a3:0000:0000:8a2e:0370:7334 here",
        {"IP": ["2001:0db8:85a3:0000:0000:8a2e:0370:7334"]},
    ),
    ("listen on ::1 port 80", {"IP": ["::1"]}),
    ("client 203.0.113.45 failed login", {"IP": ["203.0.113.45"]}),
    ("我家路由器 192.168.0.1", {"IP": ["192.168.0.1"]}),
    ("upgrade to version 1.2.3.4 today", {}),
    ("固件版本 2.1.0.3 已发布", {}),
    ("v10.0.0.1 is the tag", {}),
    ("pi is 3.14159 and 256.1.1.1 is not an address", {}),
    ("the MAC is 00:1A:2B:3C:4D:5E", {}),
    ("call std::vector::push_back", {}),
    ("at 12:30:45 sharp", {}),
    ("Windows 10.0.19041.1 build", {}),
    # --- secrets ---------------------------------------------------------------------------
    (
        "export OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
        {"SECRET": ["sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"]},
    ),
    (
        "key sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe",
        {"SECRET": ["sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe"]},
    ),
    (
        "token ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        {"SECRET": ["ghp_16C7e42F292c6912E7710c838347Ae178B4a"]},
    ),
    ("aws AKIAIOSFODNN7EXAMPLE in the config", {"SECRET": ["AKIAIOSFODNN7EXAMPLE"]}),
    (
        "maps key AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
        {"SECRET": ["AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"]},
    ),
    ("slack xoxb-2048-4096-a1B2c3D4e5F6g7H8", {"SECRET": ["xoxb-2048-4096-a1B2c3D4e5F6g7H8"]}),
    (
        "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345 is my hugging face token",
        {"SECRET": ["hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"]},
    ),
    ("stripe sk_live_51Hx8Kq2eZvKYlo2C9a8b7c6d", {"SECRET": ["sk_live_51Hx8Kq2eZvKYlo2C9a8b7c6d"]}),
    (
        "Authorization: Bearer "
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVPmB92K27uhbUJU1p1r",
        {"SECRET": ["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVPmB92K27uhbUJU1p1r"]},
    ),
    ("my password: hunter2!x", {"SECRET": ["hunter2!x"]}),
    ("WiFi密码：Abc12345", {"SECRET": ["Abc12345"]}),
    ("数据库密码是=Pg$ecret99", {"SECRET": ["Pg$ecret99"]}),
    (
        "the api token 9fK2mQx7Lp3RtV8wZ4yN6bH1cJ5dG0sE works",
        {"SECRET": ["9fK2mQx7Lp3RtV8wZ4yN6bH1cJ5dG0sE"]},
    ),
    ("glpat-xY7zQ2wE9rT4yU1iO3pA", {"SECRET": ["glpat-xY7zQ2wE9rT4yU1iO3pA"]}),
    ("commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it", {}),
    ("sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", {}),
    ("request id 550e8400-e29b-41d4-a716-446655440000", {}),
    ("rename ThisIsAVeryLongVariableNameForTesting please", {}),
    ("see https://example.com/docs/getting-started/installation-guide", {}),
    ("I forgot my password, send a reset link", {}),
    ("密码学是一门有趣的课程", {}),
    ("the file is /usr/local/lib/python3.11/site-packages/numpy", {}),
    ("MD5 d41d8cd98f00b204e9800998ecf8427e matches", {}),
    ("SKU-2023-ABCD-1234 restocked", {}),
    # --- mixed ----------------------------------------------------------------------------
    (
        "I'm Li Wei, li.wei@example.cn, 13511112222, card 4111111111111111.",
        {"EMAIL": ["li.wei@example.cn"], "PHONE": ["13511112222"], "CARD": ["4111111111111111"]},
    ),
    (
        "Server 172.16.0.5 uses key AKIAABCDEFGHIJKLMNOP; admin admin@corp.example.com",
        {
            "IP": ["172.16.0.5"],
            "SECRET": ["AKIAABCDEFGHIJKLMNOP"],
            "EMAIL": ["admin@corp.example.com"],
        },
    ),
    (
        "我叫王芳，电话 +86 186 0000 1111，身份证 11010519491231002X",
        {"PHONE": ["+86 186 0000 1111"], "CN_ID": ["11010519491231002X"]},
    ),
    ("I moved to Lisbon in May 2023 and started learning the guitar", {}),
    ("我上周去了杭州，见了老同学，吃了西湖醋鱼", {}),
]
