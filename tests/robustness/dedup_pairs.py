# ruff: noqa: E501  (a data table: one labelled example per line reads best)
"""A labelled set of text pairs for the near-duplicate rule (issue 7 §1), English + Chinese.

Each entry is a base statement with

- ``same``: texts that say exactly the same thing (``reworded``: case, punctuation,
  spacing, a filler word; ``paraphrase``: other words, same facts) — a merge is allowed;
- ``different``: texts on the same topic that differ in a fact (``number``, ``unit``,
  ``date``, ``name``, ``negation``, ``quantity``, ``fact``: another object or attribute) —
  a merge would lose information.

:data:`UNRELATED` pairs texts of different bases. :func:`pairs` flattens everything to
``(a, b, same, kind, lang)``. Written by hand for this test; no benchmark text is used.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["BASES", "Pair", "pairs"]


class Pair(NamedTuple):
    a: str
    b: str
    same: bool
    kind: str
    lang: str


# (lang, base, same: [(kind, text)], different: [(kind, text)])
Base = tuple[str, str, list[tuple[str, str]], list[tuple[str, str]]]

BASES: list[Base] = [
    (
        "en",
        "Take 5 mg of the medication daily",
        [
            ("reworded", "take 5 mg of the medication daily."),
            ("paraphrase", "Take 5 mg of the medication every day"),
        ],
        [
            ("number", "Take 50 mg of the medication daily"),
            ("unit", "Take 5 g of the medication daily"),
            ("negation", "Do not take 5 mg of the medication daily"),
        ],
    ),
    (
        "en",
        "Alice weighs 65 kg",
        [("reworded", "Alice weighs 65 kg."), ("reworded", "alice weighs 65 kg")],
        [
            ("number", "Alice weighs 60 kg"),
            ("name", "Bob weighs 65 kg"),
            ("unit", "Alice weighs 65 lb"),
        ],
    ),
    (
        "en",
        "My flight to Tokyo leaves on March 3 at 9:40",
        [
            ("reworded", "My flight to Tokyo leaves on March 3 at 9:40."),
            ("paraphrase", "My flight to Tokyo departs on March 3 at 9:40"),
        ],
        [
            ("date", "My flight to Tokyo leaves on March 4 at 9:40"),
            ("number", "My flight to Tokyo leaves on March 3 at 9:45"),
            ("name", "My flight to Osaka leaves on March 3 at 9:40"),
            ("date", "My flight to Tokyo leaves on May 3 at 9:40"),
        ],
    ),
    (
        "en",
        "Bob is allergic to peanuts",
        [("reworded", "Bob is allergic to peanuts!"), ("paraphrase", "Bob has a peanut allergy")],
        [
            ("negation", "Bob is not allergic to peanuts"),
            ("name", "Carol is allergic to peanuts"),
            ("fact", "Bob is allergic to shellfish"),
        ],
    ),
    (
        "en",
        "The meeting with the design team is on Tuesday",
        [
            ("reworded", "the meeting with the design team is on Tuesday."),
            ("paraphrase", "The design team meeting is on Tuesday"),
        ],
        [
            ("date", "The meeting with the design team is on Thursday"),
            ("fact", "The meeting with the sales team is on Tuesday"),
            ("negation", "The meeting with the design team is not on Tuesday"),
        ],
    ),
    (
        "en",
        "I prefer tea over coffee in the morning",
        [
            ("reworded", "I prefer tea over coffee in the morning."),
            ("paraphrase", "In the morning I prefer tea over coffee"),
        ],
        [
            ("fact", "I prefer coffee over tea in the morning"),
            ("fact", "I prefer tea over coffee in the evening"),
            ("negation", "I don't prefer tea over coffee in the morning"),
        ],
    ),
    (
        "en",
        "The rent is 1,200 dollars per month",
        [
            ("reworded", "The rent is 1200 dollars per month"),
            ("reworded", "the rent is 1,200 dollars per month."),
        ],
        [
            ("number", "The rent is 1,500 dollars per month"),
            ("unit", "The rent is 1,200 euros per month"),
            ("quantity", "The rent is 1,200 dollars per week"),
        ],
    ),
    (
        "en",
        "Carol's daughter is 7 years old",
        [
            ("reworded", "Carol's daughter is 7 years old."),
            ("paraphrase", "Carol's daughter is seven years old"),
        ],
        [
            ("number", "Carol's daughter is 8 years old"),
            ("name", "Dana's daughter is 7 years old"),
            ("fact", "Carol's son is 7 years old"),
        ],
    ),
    (
        "en",
        "Run the backup script every night at 2 am",
        [
            ("reworded", "Run the backup script every night at 2 AM."),
            ("reworded", "run the backup script every night at 2 am"),
        ],
        [
            ("number", "Run the backup script every night at 3 am"),
            ("negation", "Never run the backup script at night"),
            ("quantity", "Run the backup script every week at 2 am"),
        ],
    ),
    (
        "en",
        "The server has 64 GB of memory",
        [
            ("reworded", "The server has 64 GB of memory."),
            ("paraphrase", "The server has 64 GB of RAM"),
        ],
        [
            ("number", "The server has 32 GB of memory"),
            ("unit", "The server has 64 MB of memory"),
            ("fact", "The server has 64 GB of disk"),
        ],
    ),
    (
        "en",
        "Dave lives in Lisbon with his wife",
        [
            ("reworded", "Dave lives in Lisbon with his wife."),
            ("paraphrase", "Dave and his wife live in Lisbon"),
        ],
        [
            ("name", "Dave lives in Porto with his wife"),
            ("name", "Erin lives in Lisbon with her wife"),
            ("fact", "Dave lives in Lisbon with his brother"),
        ],
    ),
    (
        "en",
        "The project deadline is Friday, June 14",
        [
            ("reworded", "The project deadline is Friday June 14"),
            ("reworded", "the project deadline is Friday, June 14."),
        ],
        [
            ("date", "The project deadline is Friday, June 21"),
            ("date", "The project deadline is Monday, June 14"),
            ("date", "The project deadline is Friday, July 14"),
        ],
    ),
    (
        "en",
        "I can eat eggs but not dairy",
        [
            ("reworded", "I can eat eggs, but not dairy."),
            ("reworded", "I can eat eggs but not dairy!"),
        ],
        [
            ("negation", "I can eat dairy but not eggs"),
            ("negation", "I can eat eggs and dairy"),
            ("fact", "I can eat fish but not dairy"),
        ],
    ),
    (
        "en",
        "The car needs an oil change every 10,000 km",
        [
            ("reworded", "The car needs an oil change every 10000 km"),
            ("paraphrase", "Every 10,000 km the car needs an oil change"),
        ],
        [
            ("number", "The car needs an oil change every 15,000 km"),
            ("unit", "The car needs an oil change every 10,000 miles"),
            ("fact", "The car needs a tyre change every 10,000 km"),
        ],
    ),
    (
        "en",
        "Frank's phone number ends in 4417",
        [
            ("reworded", "Frank's phone number ends in 4417."),
            ("reworded", "frank's phone number ends in 4417"),
        ],
        [
            ("number", "Frank's phone number ends in 4471"),
            ("name", "Grace's phone number ends in 4417"),
        ],
    ),
    (
        "en",
        "The water boils at 100 degrees Celsius at sea level",
        [
            ("reworded", "Water boils at 100 degrees Celsius at sea level"),
            ("reworded", "The water boils at 100 degrees Celsius at sea level."),
        ],
        [
            ("number", "The water boils at 90 degrees Celsius at sea level"),
            ("unit", "The water boils at 100 degrees Fahrenheit at sea level"),
            ("negation", "The water does not boil at 100 degrees Celsius at sea level"),
        ],
    ),
    (
        "en",
        "Henry started his new job at Acme in 2021",
        [
            ("reworded", "Henry started his new job at Acme in 2021."),
            ("paraphrase", "In 2021 Henry started his new job at Acme"),
        ],
        [
            ("date", "Henry started his new job at Acme in 2019"),
            ("name", "Henry started his new job at Globex in 2021"),
            ("name", "Irene started her new job at Acme in 2021"),
        ],
    ),
    (
        "en",
        "Keep the thermostat at 21 degrees during the day",
        [
            ("reworded", "Keep the thermostat at 21 degrees during the day."),
            ("reworded", "keep the thermostat at 21 degrees during the day"),
        ],
        [
            ("number", "Keep the thermostat at 18 degrees during the day"),
            ("fact", "Keep the thermostat at 21 degrees during the night"),
            ("negation", "Don't keep the thermostat at 21 degrees during the day"),
        ],
    ),
    (
        "en",
        "The user wants two tickets for the concert",
        [
            ("reworded", "The user wants two tickets for the concert."),
            ("paraphrase", "The user wants 2 tickets for the concert"),
        ],
        [
            ("quantity", "The user wants three tickets for the concert"),
            ("quantity", "The user wants two tickets for the opera"),
            ("negation", "The user does not want tickets for the concert"),
        ],
    ),
    (
        "en",
        "Jack drinks about three cups of coffee a day",
        [
            ("reworded", "Jack drinks about three cups of coffee a day."),
            ("reworded", "Jack drinks about 3 cups of coffee a day"),
        ],
        [
            ("quantity", "Jack drinks about five cups of coffee a day"),
            ("quantity", "Jack drinks about three cups of coffee a week"),
            ("name", "Kate drinks about three cups of coffee a day"),
        ],
    ),
    (
        "en",
        "The invoice total was $249.99",
        [
            ("reworded", "The invoice total was $249.99."),
            ("reworded", "the invoice total was $249.99"),
        ],
        [("number", "The invoice total was $294.99"), ("number", "The invoice total was $249.90")],
    ),
    (
        "en",
        "Laura has never been to Japan",
        [
            ("reworded", "Laura has never been to Japan."),
            ("paraphrase", "Laura has not ever been to Japan"),
        ],
        [
            ("negation", "Laura has been to Japan"),
            ("name", "Laura has never been to Korea"),
            ("name", "Mike has never been to Japan"),
        ],
    ),
    (
        "en",
        "The API rate limit is 100 requests per minute",
        [
            ("reworded", "The API rate limit is 100 requests per minute."),
            ("reworded", "The API rate-limit is 100 requests per minute"),
        ],
        [
            ("number", "The API rate limit is 1000 requests per minute"),
            ("quantity", "The API rate limit is 100 requests per second"),
            ("quantity", "The API rate limit is 100 requests per hour"),
        ],
    ),
    (
        "en",
        "Nina's birthday is on October 12",
        [
            ("reworded", "Nina's birthday is on October 12."),
            ("reworded", "Nina's birthday is on 12 October"),
        ],
        [
            ("date", "Nina's birthday is on October 21"),
            ("date", "Nina's birthday is on November 12"),
            ("name", "Omar's birthday is on October 12"),
        ],
    ),
    (
        "en",
        "The patient should avoid alcohol for 48 hours after the procedure",
        [
            ("reworded", "The patient should avoid alcohol for 48 hours after the procedure."),
            ("paraphrase", "After the procedure the patient should avoid alcohol for 48 hours"),
        ],
        [
            ("number", "The patient should avoid alcohol for 24 hours after the procedure"),
            ("unit", "The patient should avoid alcohol for 48 days after the procedure"),
            ("fact", "The patient should avoid driving for 48 hours after the procedure"),
        ],
    ),
    (
        "en",
        "Paul prefers the aisle seat on flights",
        [
            ("reworded", "Paul prefers the aisle seat on flights."),
            ("paraphrase", "On flights Paul prefers the aisle seat"),
        ],
        [
            ("fact", "Paul prefers the window seat on flights"),
            ("name", "Quinn prefers the aisle seat on flights"),
            ("negation", "Paul does not prefer the aisle seat on flights"),
        ],
    ),
    (
        "en",
        "The package weighs 2.5 kg",
        [("reworded", "The package weighs 2.5 kg."), ("reworded", "the package weighs 2.5 kg")],
        [
            ("number", "The package weighs 25 kg"),
            ("number", "The package weighs 2.8 kg"),
            ("unit", "The package weighs 2.5 lb"),
        ],
    ),
    (
        "en",
        "Rachel is vegetarian",
        [("reworded", "Rachel is vegetarian."), ("reworded", "Rachel is a vegetarian")],
        [
            ("negation", "Rachel is not vegetarian"),
            ("name", "Sam is vegetarian"),
            ("fact", "Rachel is vegan"),
        ],
    ),
    (
        "en",
        "The office opens at 8:30 on weekdays",
        [
            ("reworded", "The office opens at 8:30 on weekdays."),
            ("paraphrase", "On weekdays the office opens at 8:30"),
        ],
        [
            ("number", "The office opens at 9:30 on weekdays"),
            ("fact", "The office opens at 8:30 on weekends"),
            ("fact", "The office closes at 8:30 on weekdays"),
        ],
    ),
    (
        "en",
        "Tom owes me 40 euros for the tickets",
        [
            ("reworded", "Tom owes me 40 euros for the tickets."),
            ("reworded", "Tom owes me €40 for the tickets"),
        ],
        [
            ("number", "Tom owes me 400 euros for the tickets"),
            ("name", "Uma owes me 40 euros for the tickets"),
            ("fact", "I owe Tom 40 euros for the tickets"),
        ],
    ),
    (
        "en",
        "The kids go to bed at 8 pm",
        [("reworded", "The kids go to bed at 8 pm."), ("reworded", "The kids go to bed at 8 PM")],
        [("number", "The kids go to bed at 9 pm"), ("fact", "The kids get up at 8 am")],
    ),
    (
        "en",
        "Victor speaks French and Spanish",
        [
            ("reworded", "Victor speaks French and Spanish."),
            ("paraphrase", "Victor speaks Spanish and French"),
        ],
        [
            ("name", "Victor speaks French and German"),
            ("negation", "Victor does not speak French"),
            ("name", "Wendy speaks French and Spanish"),
        ],
    ),
    (
        "en",
        "Use port 5432 for the database",
        [
            ("reworded", "Use port 5432 for the database."),
            ("reworded", "use port 5432 for the database"),
        ],
        [
            ("number", "Use port 5433 for the database"),
            ("negation", "Do not use port 5432 for the database"),
        ],
    ),
    (
        "en",
        "The garden needs watering twice a week in summer",
        [
            ("reworded", "The garden needs watering twice a week in summer."),
            ("paraphrase", "In summer the garden needs watering twice a week"),
        ],
        [
            ("quantity", "The garden needs watering three times a week in summer"),
            ("fact", "The garden needs watering twice a week in winter"),
            ("quantity", "The garden needs watering twice a day in summer"),
        ],
    ),
    (
        "en",
        "Xavier moved to Berlin in September 2022",
        [
            ("reworded", "Xavier moved to Berlin in September 2022."),
            ("paraphrase", "In September 2022 Xavier moved to Berlin"),
        ],
        [
            ("date", "Xavier moved to Berlin in September 2023"),
            ("date", "Xavier moved to Berlin in October 2022"),
            ("name", "Xavier moved to Munich in September 2022"),
        ],
    ),
    (
        "en",
        "The dog must not be fed chocolate",
        [
            ("reworded", "The dog must not be fed chocolate."),
            ("paraphrase", "The dog must never be fed chocolate"),
        ],
        [
            ("negation", "The dog must be fed chocolate"),
            ("fact", "The cat must not be fed chocolate"),
        ],
    ),
    (
        "en",
        "Yara's password hint is her first pet's name",
        [
            ("reworded", "Yara's password hint is her first pet's name."),
            ("reworded", "yara's password hint is her first pet's name"),
        ],
        [
            ("fact", "Yara's password hint is her mother's maiden name"),
            ("name", "Zoe's password hint is her first pet's name"),
        ],
    ),
    (
        "en",
        "The train to Paris takes 3 hours and 20 minutes",
        [
            ("reworded", "The train to Paris takes 3 hours and 20 minutes."),
            ("reworded", "The train to Paris takes 3 hours, 20 minutes"),
        ],
        [
            ("number", "The train to Paris takes 2 hours and 20 minutes"),
            ("number", "The train to Paris takes 3 hours and 50 minutes"),
            ("name", "The train to Brussels takes 3 hours and 20 minutes"),
        ],
    ),
    (
        "en",
        "I have a dentist appointment tomorrow afternoon",
        [
            ("reworded", "I have a dentist appointment tomorrow afternoon."),
            ("paraphrase", "Tomorrow afternoon I have a dentist appointment"),
        ],
        [
            ("date", "I have a dentist appointment tomorrow morning"),
            ("date", "I had a dentist appointment yesterday afternoon"),
            ("fact", "I have a doctor appointment tomorrow afternoon"),
        ],
    ),
    (
        "en",
        "The budget for the trip is at most 3,000 dollars",
        [
            ("reworded", "The budget for the trip is at most 3000 dollars"),
            ("reworded", "The budget for the trip is at most 3,000 dollars."),
        ],
        [
            ("number", "The budget for the trip is at most 5,000 dollars"),
            ("quantity", "The budget for the trip is at least 3,000 dollars"),
        ],
    ),
    (
        "en",
        "Amy takes the 7:15 bus to work",
        [
            ("reworded", "Amy takes the 7:15 bus to work."),
            ("reworded", "amy takes the 7:15 bus to work"),
        ],
        [
            ("number", "Amy takes the 7:45 bus to work"),
            ("fact", "Amy takes the 7:15 train to work"),
            ("name", "Ben takes the 7:15 bus to work"),
        ],
    ),
    (
        "en",
        "The medication should be taken with food",
        [
            ("reworded", "The medication should be taken with food."),
            ("reworded", "The medication should be taken with food!"),
        ],
        [
            ("negation", "The medication should not be taken with food"),
            ("fact", "The medication should be taken with water"),
        ],
    ),
    (
        "en",
        "Chris has 3 brothers and 1 sister",
        [
            ("reworded", "Chris has 3 brothers and 1 sister."),
            ("paraphrase", "Chris has three brothers and one sister"),
        ],
        [
            ("quantity", "Chris has 2 brothers and 1 sister"),
            ("quantity", "Chris has 3 sisters and 1 brother"),
            ("name", "Chloe has 3 brothers and 1 sister"),
        ],
    ),
    (
        "en",
        "The warranty covers the laptop for 2 years",
        [
            ("reworded", "The warranty covers the laptop for 2 years."),
            ("paraphrase", "The warranty covers the laptop for two years"),
        ],
        [
            ("number", "The warranty covers the laptop for 3 years"),
            ("unit", "The warranty covers the laptop for 2 months"),
            ("negation", "The warranty does not cover the laptop"),
        ],
    ),
    (
        "en",
        "Diana will be in London from May 2 to May 9",
        [
            ("reworded", "Diana will be in London from May 2 to May 9."),
            ("reworded", "Diana will be in London from May 2 until May 9"),
        ],
        [
            ("date", "Diana will be in London from May 2 to May 19"),
            ("name", "Diana will be in Dublin from May 2 to May 9"),
            ("date", "Diana was in London from May 2 to May 9 last year"),
        ],
    ),
    (
        "en",
        "Remember that the gate code is 1984",
        [
            ("reworded", "Remember that the gate code is 1984."),
            ("paraphrase", "Remember, the gate code is 1984"),
        ],
        [
            ("number", "Remember that the gate code is 1948"),
            ("fact", "Remember that the alarm code is 1984"),
        ],
    ),
    (
        "en",
        "Evan does not like spicy food",
        [
            ("reworded", "Evan does not like spicy food."),
            ("paraphrase", "Evan doesn't like spicy food"),
        ],
        [
            ("negation", "Evan likes spicy food"),
            ("name", "Fiona does not like spicy food"),
            ("fact", "Evan does not like sweet food"),
        ],
    ),
    (
        "en",
        "The recipe needs 200 grams of flour and 2 eggs",
        [
            ("reworded", "The recipe needs 200 grams of flour and 2 eggs."),
            ("paraphrase", "The recipe needs 200 g of flour and two eggs"),
        ],
        [
            ("number", "The recipe needs 250 grams of flour and 2 eggs"),
            ("quantity", "The recipe needs 200 grams of flour and 3 eggs"),
            ("fact", "The recipe needs 200 grams of sugar and 2 eggs"),
        ],
    ),
    (
        "en",
        "George retired at the age of 65",
        [
            ("reworded", "George retired at the age of 65."),
            ("reworded", "George retired at age 65"),
        ],
        [
            ("number", "George retired at the age of 60"),
            ("name", "Hannah retired at the age of 65"),
        ],
    ),
    (
        "en",
        "Set the alarm for 6:00 on Mondays",
        [
            ("reworded", "Set the alarm for 6:00 on Mondays."),
            ("reworded", "set the alarm for 6:00 on mondays"),
        ],
        [
            ("number", "Set the alarm for 7:00 on Mondays"),
            ("date", "Set the alarm for 6:00 on Fridays"),
        ],
    ),
    # --- Chinese ----------------------------------------------------------------------
    (
        "zh",
        "每天服用5毫克药物",
        [("reworded", "每天服用5毫克药物。"), ("reworded", "每天服用 5 毫克药物")],
        [
            ("number", "每天服用50毫克药物"),
            ("unit", "每天服用5克药物"),
            ("negation", "不要每天服用5毫克药物"),
        ],
    ),
    (
        "zh",
        "小王的体重是65公斤",
        [("reworded", "小王的体重是65公斤。"), ("reworded", "小王体重是65公斤")],
        [
            ("number", "小王的体重是60公斤"),
            ("name", "小李的体重是65公斤"),
            ("unit", "小王的体重是65斤"),
        ],
    ),
    (
        "zh",
        "我对花生过敏",
        [("reworded", "我对花生过敏。"), ("reworded", "我对花生过敏！")],
        [("negation", "我对花生不过敏"), ("fact", "我对海鲜过敏"), ("name", "他对花生过敏")],
    ),
    (
        "zh",
        "周二下午三点和设计团队开会",
        [("reworded", "周二下午三点和设计团队开会。"), ("paraphrase", "周二下午3点和设计团队开会")],
        [
            ("date", "周四下午三点和设计团队开会"),
            ("number", "周二下午四点和设计团队开会"),
            ("fact", "周二下午三点和销售团队开会"),
        ],
    ),
    (
        "zh",
        "我喜欢早上喝茶",
        [("reworded", "我喜欢早上喝茶。"), ("reworded", "我喜欢早上喝茶！")],
        [
            ("fact", "我喜欢早上喝咖啡"),
            ("fact", "我喜欢晚上喝茶"),
            ("negation", "我不喜欢早上喝茶"),
        ],
    ),
    (
        "zh",
        "房租每月一千二百元",
        [("reworded", "房租每月一千二百元。"), ("paraphrase", "房租每月1200元")],
        [
            ("number", "房租每月一千五百元"),
            ("quantity", "房租每周一千二百元"),
            ("unit", "房租每月一千二百美元"),
        ],
    ),
    (
        "zh",
        "张伟的女儿今年七岁",
        [("reworded", "张伟的女儿今年七岁。"), ("paraphrase", "张伟的女儿今年7岁")],
        [
            ("number", "张伟的女儿今年八岁"),
            ("name", "李娜的女儿今年七岁"),
            ("fact", "张伟的儿子今年七岁"),
        ],
    ),
    (
        "zh",
        "每天晚上两点运行备份脚本",
        [("reworded", "每天晚上两点运行备份脚本。"), ("paraphrase", "每天晚上2点运行备份脚本")],
        [
            ("number", "每天晚上三点运行备份脚本"),
            ("negation", "晚上不要运行备份脚本"),
            ("quantity", "每周晚上两点运行备份脚本"),
        ],
    ),
    (
        "zh",
        "服务器有64GB内存",
        [("reworded", "服务器有64GB内存。"), ("reworded", "服务器有 64 GB 内存")],
        [
            ("number", "服务器有32GB内存"),
            ("unit", "服务器有64MB内存"),
            ("fact", "服务器有64GB硬盘"),
        ],
    ),
    (
        "zh",
        "刘洋和妻子住在上海",
        [("reworded", "刘洋和妻子住在上海。"), ("reworded", "刘洋和妻子住在上海！")],
        [
            ("name", "刘洋和妻子住在北京"),
            ("name", "王芳和丈夫住在上海"),
            ("fact", "刘洋和哥哥住在上海"),
        ],
    ),
    (
        "zh",
        "项目截止日期是六月十四日",
        [("reworded", "项目截止日期是六月十四日。"), ("paraphrase", "项目截止日期是6月14日")],
        [("date", "项目截止日期是六月二十一日"), ("date", "项目截止日期是七月十四日")],
    ),
    (
        "zh",
        "我能吃鸡蛋但不能吃奶制品",
        [("reworded", "我能吃鸡蛋，但不能吃奶制品。"), ("reworded", "我能吃鸡蛋但不能吃奶制品。")],
        [
            ("negation", "我能吃奶制品但不能吃鸡蛋"),
            ("negation", "我能吃鸡蛋也能吃奶制品"),
            ("fact", "我能吃鱼但不能吃奶制品"),
        ],
    ),
    (
        "zh",
        "汽车每开一万公里需要换一次机油",
        [
            ("reworded", "汽车每开一万公里需要换一次机油。"),
            ("paraphrase", "汽车每开10000公里需要换一次机油"),
        ],
        [
            ("number", "汽车每开一万五千公里需要换一次机油"),
            ("unit", "汽车每开一万英里需要换一次机油"),
            ("fact", "汽车每开一万公里需要换一次轮胎"),
        ],
    ),
    (
        "zh",
        "水在海平面一百摄氏度沸腾",
        [("reworded", "水在海平面一百摄氏度沸腾。"), ("paraphrase", "水在海平面100摄氏度沸腾")],
        [
            ("number", "水在海平面九十摄氏度沸腾"),
            ("unit", "水在海平面一百华氏度沸腾"),
            ("negation", "水在海平面一百摄氏度不沸腾"),
        ],
    ),
    (
        "zh",
        "陈静2021年加入了阿里巴巴",
        [("reworded", "陈静2021年加入了阿里巴巴。"), ("paraphrase", "陈静于2021年加入了阿里巴巴")],
        [
            ("date", "陈静2019年加入了阿里巴巴"),
            ("name", "陈静2021年加入了腾讯"),
            ("name", "赵敏2021年加入了阿里巴巴"),
        ],
    ),
    (
        "zh",
        "白天把空调温度设在二十一度",
        [("reworded", "白天把空调温度设在二十一度。"), ("paraphrase", "白天把空调温度设在21度")],
        [
            ("number", "白天把空调温度设在十八度"),
            ("fact", "晚上把空调温度设在二十一度"),
            ("negation", "白天不要把空调温度设在二十一度"),
        ],
    ),
    (
        "zh",
        "用户想要两张音乐会的票",
        [("reworded", "用户想要两张音乐会的票。"), ("paraphrase", "用户想要2张音乐会的票")],
        [
            ("quantity", "用户想要三张音乐会的票"),
            ("fact", "用户想要两张歌剧的票"),
            ("negation", "用户不想要音乐会的票"),
        ],
    ),
    (
        "zh",
        "老周每天大约喝三杯咖啡",
        [("reworded", "老周每天大约喝三杯咖啡。"), ("paraphrase", "老周每天大约喝3杯咖啡")],
        [
            ("quantity", "老周每天大约喝五杯咖啡"),
            ("quantity", "老周每周大约喝三杯咖啡"),
            ("name", "老吴每天大约喝三杯咖啡"),
        ],
    ),
    (
        "zh",
        "发票总额是249.99元",
        [("reworded", "发票总额是249.99元。"), ("reworded", "发票总额是 249.99 元")],
        [("number", "发票总额是294.99元"), ("number", "发票总额是249.90元")],
    ),
    (
        "zh",
        "林晓从来没去过日本",
        [("reworded", "林晓从来没去过日本。"), ("reworded", "林晓从来没去过日本！")],
        [
            ("negation", "林晓去过日本"),
            ("name", "林晓从来没去过韩国"),
            ("name", "孙涛从来没去过日本"),
        ],
    ),
    (
        "zh",
        "接口限流是每分钟一百个请求",
        [("reworded", "接口限流是每分钟一百个请求。"), ("paraphrase", "接口限流是每分钟100个请求")],
        [
            ("number", "接口限流是每分钟一千个请求"),
            ("quantity", "接口限流是每秒一百个请求"),
            ("quantity", "接口限流是每小时一百个请求"),
        ],
    ),
    (
        "zh",
        "小美的生日是十月十二日",
        [("reworded", "小美的生日是十月十二日。"), ("paraphrase", "小美的生日是10月12日")],
        [
            ("date", "小美的生日是十月二十一日"),
            ("date", "小美的生日是十一月十二日"),
            ("name", "小红的生日是十月十二日"),
        ],
    ),
    (
        "zh",
        "术后四十八小时内不能喝酒",
        [("reworded", "术后四十八小时内不能喝酒。"), ("paraphrase", "术后48小时内不能喝酒")],
        [
            ("number", "术后二十四小时内不能喝酒"),
            ("unit", "术后四十八天内不能喝酒"),
            ("fact", "术后四十八小时内不能开车"),
        ],
    ),
    (
        "zh",
        "老王坐飞机喜欢靠过道的座位",
        [
            ("reworded", "老王坐飞机喜欢靠过道的座位。"),
            ("reworded", "老王坐飞机喜欢靠过道的座位！"),
        ],
        [
            ("fact", "老王坐飞机喜欢靠窗的座位"),
            ("name", "老赵坐飞机喜欢靠过道的座位"),
            ("negation", "老王坐飞机不喜欢靠过道的座位"),
        ],
    ),
    (
        "zh",
        "包裹重2.5公斤",
        [("reworded", "包裹重2.5公斤。"), ("reworded", "包裹重 2.5 公斤")],
        [("number", "包裹重25公斤"), ("number", "包裹重2.8公斤"), ("unit", "包裹重2.5斤")],
    ),
    (
        "zh",
        "小红是素食者",
        [("reworded", "小红是素食者。"), ("reworded", "小红是一个素食者")],
        [("negation", "小红不是素食者"), ("name", "小明是素食者"), ("fact", "小红是纯素食者")],
    ),
    (
        "zh",
        "办公室工作日早上八点半开门",
        [("reworded", "办公室工作日早上八点半开门。"), ("paraphrase", "办公室工作日早上8点半开门")],
        [
            ("number", "办公室工作日早上九点半开门"),
            ("fact", "办公室周末早上八点半开门"),
            ("fact", "办公室工作日晚上八点半关门"),
        ],
    ),
    (
        "zh",
        "小张欠我四十元票钱",
        [("reworded", "小张欠我四十元票钱。"), ("paraphrase", "小张欠我40元票钱")],
        [
            ("number", "小张欠我四百元票钱"),
            ("name", "小刘欠我四十元票钱"),
            ("fact", "我欠小张四十元票钱"),
        ],
    ),
    (
        "zh",
        "孩子们晚上八点睡觉",
        [("reworded", "孩子们晚上八点睡觉。"), ("paraphrase", "孩子们晚上8点睡觉")],
        [("number", "孩子们晚上九点睡觉"), ("fact", "孩子们早上八点起床")],
    ),
    (
        "zh",
        "数据库使用5432端口",
        [("reworded", "数据库使用5432端口。"), ("reworded", "数据库使用 5432 端口")],
        [("number", "数据库使用5433端口"), ("negation", "数据库不要使用5432端口")],
    ),
    (
        "zh",
        "夏天花园每周浇两次水",
        [("reworded", "夏天花园每周浇两次水。"), ("paraphrase", "夏天花园每周浇2次水")],
        [
            ("quantity", "夏天花园每周浇三次水"),
            ("fact", "冬天花园每周浇两次水"),
            ("quantity", "夏天花园每天浇两次水"),
        ],
    ),
    (
        "zh",
        "狗不能吃巧克力",
        [("reworded", "狗不能吃巧克力。"), ("reworded", "狗不能吃巧克力！")],
        [("negation", "狗能吃巧克力"), ("fact", "猫不能吃巧克力")],
    ),
    (
        "zh",
        "去巴黎的火车要三小时二十分钟",
        [
            ("reworded", "去巴黎的火车要三小时二十分钟。"),
            ("paraphrase", "去巴黎的火车要3小时20分钟"),
        ],
        [
            ("number", "去巴黎的火车要两小时二十分钟"),
            ("number", "去巴黎的火车要三小时五十分钟"),
            ("name", "去伦敦的火车要三小时二十分钟"),
        ],
    ),
    (
        "zh",
        "我明天下午要去看牙医",
        [("reworded", "我明天下午要去看牙医。"), ("reworded", "我明天下午要去看牙医！")],
        [
            ("date", "我明天上午要去看牙医"),
            ("date", "我昨天下午去看了牙医"),
            ("fact", "我明天下午要去看医生"),
        ],
    ),
    (
        "zh",
        "旅行预算最多三千元",
        [("reworded", "旅行预算最多三千元。"), ("paraphrase", "旅行预算最多3000元")],
        [("number", "旅行预算最多五千元"), ("quantity", "旅行预算至少三千元")],
    ),
    (
        "zh",
        "小芳每天坐七点十五分的公交上班",
        [
            ("reworded", "小芳每天坐七点十五分的公交上班。"),
            ("paraphrase", "小芳每天坐7点15分的公交上班"),
        ],
        [
            ("number", "小芳每天坐七点四十五分的公交上班"),
            ("fact", "小芳每天坐七点十五分的地铁上班"),
            ("name", "小强每天坐七点十五分的公交上班"),
        ],
    ),
    (
        "zh",
        "这个药要饭后吃",
        [("reworded", "这个药要饭后吃。"), ("reworded", "这个药要饭后吃！")],
        [("fact", "这个药要饭前吃"), ("negation", "这个药不要饭后吃")],
    ),
    (
        "zh",
        "保修期是两年",
        [("reworded", "保修期是两年。"), ("paraphrase", "保修期是2年")],
        [("number", "保修期是三年"), ("unit", "保修期是两个月")],
    ),
    (
        "zh",
        "门禁密码是1984",
        [("reworded", "门禁密码是1984。"), ("reworded", "门禁密码是 1984")],
        [("number", "门禁密码是1948"), ("fact", "保险箱密码是1984")],
    ),
    (
        "zh",
        "小陈不喜欢吃辣",
        [("reworded", "小陈不喜欢吃辣。"), ("reworded", "小陈不喜欢吃辣！")],
        [("negation", "小陈喜欢吃辣"), ("name", "小吴不喜欢吃辣"), ("fact", "小陈不喜欢吃甜")],
    ),
    (
        "zh",
        "周一早上六点的闹钟",
        [("reworded", "周一早上六点的闹钟。"), ("paraphrase", "周一早上6点的闹钟")],
        [("number", "周一早上七点的闹钟"), ("date", "周五早上六点的闹钟")],
    ),
]

# Pairs of unrelated statements (indices into BASES, chosen across topics and languages).
UNRELATED: list[tuple[int, int]] = [
    (i, (i * 7 + 13) % len(BASES)) for i in range(len(BASES)) if i != (i * 7 + 13) % len(BASES)
]


def pairs() -> list[Pair]:
    out: list[Pair] = []
    for lang, base, same, different in BASES:
        out.extend(Pair(base, text, True, kind, lang) for kind, text in same)
        out.extend(Pair(base, text, False, kind, lang) for kind, text in different)
    for i, j in UNRELATED:
        lang = BASES[i][0] if BASES[i][0] == BASES[j][0] else "mixed"
        out.append(Pair(BASES[i][1], BASES[j][1], False, "unrelated", lang))
    return out
