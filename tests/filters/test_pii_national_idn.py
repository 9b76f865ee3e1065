"""National phone formats written without a trunk prefix or with a bracketed area code of 2-5
digits, and internationalised addresses in scripts written without spaces (review #12)."""

import pytest

from filters.pii import find_pii, scrub


@pytest.mark.parametrize(
    ("text", "lang", "regions", "scrubbed"),
    [
        # A bracketed 3-digit area code (Moscow), read in the document's region.
        ("Телефон: (495) 123-45-67", "ru", None, "Телефон: <PHONE>"),
        ("Звоните (495) 123-45-67 сегодня", "ru", None, "Звоните <PHONE> сегодня"),
        ("Teléfono (55) 1234 5678.", "es", None, "Teléfono <PHONE>."),
        # Plans without a trunk prefix (Mexico, Hong Kong, Singapore) or with one that is
        # written optionally (Argentina, Russia), in the groups of libphonenumber's format.
        (
            "Llámenos al 55 1234 5678 en la Ciudad de México.",
            "es",
            None,
            "Llámenos al <PHONE> en la Ciudad de México.",
        ),
        ("Llame al 11 4321-5678 en Buenos Aires", "es", None, "Llame al <PHONE> en Buenos Aires"),
        ("香港電話：2345 6789", "zh", None, "香港電話：<PHONE>"),
        ("香港電話：2345 6789", "zh", ["HK"], "香港電話：<PHONE>"),
        ("新加坡办公室 6123 4567 欢迎来电", "zh", None, "新加坡办公室 <PHONE> 欢迎来电"),
        ("Звоните 495 123-45-67 сегодня", "ru", None, "Звоните <PHONE> сегодня"),
    ],
)
def test_national_formats_without_trunk_prefix_are_phones(text, lang, regions, scrubbed):
    assert scrub(text, lang, regions=regions) == (scrubbed, {"phone": 1})


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("См. Иванов (2019) 123-45-67, там же", "ru"),  # a year in brackets: a citation
        ("Итого 9 876 543 210 руб.", "ru"),  # a sum: not in the groups of a number
        ("Precio total: 5 512 345 678 pesos", "es"),
        ("La población es de 12 345 678 habitantes", "es"),
        ("versión 55 1234 5678 del paquete", "es"),  # after a version word
        ("2019 2020 年度报告", "zh"),  # years side by side (valid Hong Kong digits)
        ("ISBN 978-5-699-12014-7 издание", "ru"),
        ("Call 55 1234 5678 in Mexico City", "en"),  # Mexico is not an English text's region
        ("Sitzung 2019-05-14 um 10:00, Punkt 4 123 567", "de"),
    ],
)
def test_grouped_look_alikes_are_not_phones(text, lang):
    assert [s for s in find_pii(text, lang) if s.type == "phone"] == []


@pytest.mark.parametrize(
    ("text", "lang", "scrubbed"),
    [
        ("Contact: user@例え.jp", "en", "Contact: <EMAIL>"),
        ("邮箱：张伟@例子.中国", "zh", "邮箱：<EMAIL>"),
        ("联系方式（张伟@例子.中国）谢谢", "zh", "联系方式（<EMAIL>）谢谢"),
        ("邮件：张伟@例子.中国。谢谢", "zh", "邮件：<EMAIL>。谢谢"),
        ("邮箱：张伟@example.com，电话", "zh", "邮箱：<EMAIL>，电话"),
        ("連絡先「山田@例え.jp」まで", "ja", "連絡先「<EMAIL>」まで"),
        ("이메일: 홍길동@예시.한국 입니다", "ko", "이메일: <EMAIL> 입니다"),
        ("อีเมล สมชาย@ตัวอย่าง.ไทย ครับ", "th", "อีเมล <EMAIL> ครับ"),
        ("البريد: محمد@مثال.السعودية، شكرا", "ar", "البريد: <EMAIL>، شكرا"),
        ("ईमेल: संपर्क@डाटामेल.भारत पर", "hi", "ईमेल: <EMAIL> पर"),
        # An ASCII local part after CJK text is the ASCII run (as before), whatever the domain.
        ("请发邮件至user@例子.com联系", "zh", "请发邮件至<EMAIL>联系"),
        ("请发邮件至zhang.wei@example.com联系我们", "zh", "请发邮件至<EMAIL>联系我们"),
        ("请发邮件至12345678@qq.com联系我们", "zh", "请发邮件至<EMAIL>联系我们"),
        # A CJK local part is read back to the delimiter (documented: the words go with it).
        ("请发邮件到张伟@例子.中国", "zh", "<EMAIL>"),
    ],
)
def test_internationalised_addresses_in_unspaced_scripts(text, lang, scrubbed):
    assert scrub(text, lang) == (scrubbed, {"email": 1})


@pytest.mark.parametrize(
    "text",
    [
        "邮箱：张伟@例子.中国联系",  # no delimiter after a CJK TLD: where it ends is unknown
        # No delimiter within RFC 5321's 64 octets before a CJK local part.
        "欢迎各位朋友在任何时候通过以下方式与我们的客服团队取得联系并发送邮件到张伟@例子.中国",
        "微博@某人 转发",  # a mention
        "价格：100@例子 元",
        "用户名@张三说：好",
        "Meet at 例え@ the place",
    ],
)
def test_unspaced_scripts_without_delimiters_are_left_alone(text):
    assert scrub(text, "zh") == (text, {})
