"""Words and sentence templates of the synthetic conversational set, in English and Chinese.

Every pool is a tuple of ``(english, chinese)`` pairs, so one generator writes both languages
from the same random draws. Templates use ``str.format`` fields; ``{A}``/``{B}`` are the two
speakers' names.
"""

from __future__ import annotations

__all__ = ["FILLER", "LANGS", "POOLS", "SCRIPTS", "Pair"]

Pair = tuple[str, str]
LANGS = ("en", "zh")

POOLS: dict[str, tuple[Pair, ...]] = {
    "name": (
        ("Maya", "林晓"),
        ("Jonas", "王磊"),
        ("Priya", "陈静"),
        ("Oscar", "张伟"),
        ("Elena", "刘洋"),
        ("Farid", "赵敏"),
        ("Grace", "孙悦"),
        ("Hiro", "周涛"),
        ("Ines", "吴倩"),
        ("Kemi", "郑浩"),
        ("Liam", "何琳"),
        ("Noor", "高远"),
        ("Rosa", "许诺"),
        ("Sami", "罗兰"),
        ("Tara", "马骁"),
        ("Quinn", "宋雨"),
    ),
    "sibling": (
        ("Ana", "小雪"),
        ("Ben", "小刚"),
        ("Clara", "阿娟"),
        ("David", "阿强"),
        ("Eva", "小梅"),
        ("Felix", "小龙"),
        ("Gina", "阿芳"),
        ("Hugo", "阿杰"),
    ),
    "animal": (
        ("puppy", "小狗"),
        ("kitten", "小猫"),
        ("rabbit", "兔子"),
        ("parrot", "鹦鹉"),
        ("hamster", "仓鼠"),
        ("turtle", "乌龟"),
    ),
    "pet": (
        ("Biscuit", "豆豆"),
        ("Mochi", "团子"),
        ("Pepper", "花花"),
        ("Luna", "小白"),
        ("Ziggy", "球球"),
        ("Noodle", "旺财"),
        ("Clover", "可乐"),
        ("Pixel", "布丁"),
        ("Waffle", "毛毛"),
        ("Olive", "年糕"),
    ),
    "job": (
        ("nurse", "护士"),
        ("data analyst", "数据分析师"),
        ("pastry chef", "甜点师"),
        ("architect", "建筑师"),
        ("math teacher", "数学老师"),
        ("paramedic", "急救员"),
        ("graphic designer", "平面设计师"),
        ("pharmacist", "药剂师"),
        ("translator", "翻译"),
        ("electrician", "电工"),
    ),
    "company": (
        ("Northwind", "远航科技"),
        ("Bluefield Clinic", "蓝田诊所"),
        ("Harbor Bakery", "港湾烘焙"),
        ("Greenline Studio", "绿线工作室"),
        ("Summit Bank", "峰汇银行"),
        ("Riverside School", "河畔中学"),
        ("Atlas Logistics", "阿特拉斯物流"),
        ("Cedar Labs", "雪松实验室"),
    ),
    "city": (
        ("Lisbon", "杭州"),
        ("Kyoto", "成都"),
        ("Toronto", "西安"),
        ("Porto", "厦门"),
        ("Dublin", "青岛"),
        ("Prague", "苏州"),
        ("Melbourne", "大连"),
        ("Austin", "昆明"),
        ("Oslo", "南京"),
        ("Seoul", "武汉"),
    ),
    "event": (
        ("half marathon", "半程马拉松"),
        ("pottery workshop", "陶艺工作坊"),
        ("jazz concert", "爵士音乐会"),
        ("cooking class", "烹饪课"),
        ("charity run", "慈善跑"),
        ("book fair", "书展"),
        ("climbing competition", "攀岩比赛"),
        ("photography exhibition", "摄影展"),
        ("wine tasting", "品酒会"),
        ("science museum visit", "科技馆参观"),
    ),
    "book": (
        ("The Silent Orchard", "《沉默的果园》"),
        ("Rivers of Glass", "《玻璃之河》"),
        ("A Map of Winter", "《冬天的地图》"),
        ("The Last Lighthouse", "《最后的灯塔》"),
        ("Paper Moons", "《纸月亮》"),
        ("The Clockmaker's Garden", "《钟表匠的花园》"),
        ("Salt and Stone", "《盐与石》"),
        ("Northern Lights Cafe", "《北极光咖啡馆》"),
    ),
    "sport": (
        ("tennis", "网球"),
        ("rock climbing", "攀岩"),
        ("swimming", "游泳"),
        ("badminton", "羽毛球"),
        ("kayaking", "皮划艇"),
        ("fencing", "击剑"),
        ("yoga", "瑜伽"),
        ("cycling", "骑行"),
    ),
    "restaurant": (
        ("Casa Verde", "老街面馆"),
        ("Blue Lantern", "蓝灯笼茶餐厅"),
        ("Golden Wok", "金锅小炒"),
        ("Olive Tree", "橄榄树西餐厅"),
        ("Sakura House", "樱花料理"),
        ("Little Saigon", "小西贡粉店"),
        ("Marrow & Vine", "巷子里火锅"),
    ),
    "color": (
        ("sage green", "浅绿色"),
        ("navy blue", "深蓝色"),
        ("terracotta", "陶土红"),
        ("mustard yellow", "芥末黄"),
        ("lavender", "薰衣草紫"),
        ("charcoal grey", "炭灰色"),
    ),
    "room": (
        ("bedroom", "卧室"),
        ("kitchen", "厨房"),
        ("living room", "客厅"),
        ("study", "书房"),
    ),
    "gathering": (
        ("birthday party", "生日聚会"),
        ("housewarming", "乔迁宴"),
        ("graduation dinner", "毕业晚宴"),
        ("barbecue", "烧烤聚会"),
    ),
    "food": (
        ("ramen", "拉面"),
        ("tacos", "饺子"),
        ("green curry", "火锅"),
        ("falafel", "小笼包"),
        ("paella", "烤鸭"),
        ("dumplings", "麻辣烫"),
        ("lasagna", "炒饭"),
        ("pho", "米线"),
    ),
    "feeling": (
        ("excited", "兴奋"),
        ("nervous", "紧张"),
        ("tired", "累"),
        ("proud", "自豪"),
        ("relieved", "轻松"),
        ("curious", "好奇"),
    ),
    "weekday": (
        ("Monday", "周一"),
        ("Tuesday", "周二"),
        ("Wednesday", "周三"),
        ("Thursday", "周四"),
        ("Friday", "周五"),
        ("Saturday", "周六"),
        ("Sunday", "周日"),
    ),
}

# Script sentences: (english, chinese). Kept here so the generator reads as logic only.
SCRIPTS: dict[str, Pair] = {
    # pets (fact + short reply that only makes sense after its question)
    "pet_news": (
        "Big news: we adopted a {animal} this weekend!",
        "好消息：我们这周末领养了一只{animal}！",
    ),
    "pet_ask": (
        "No way, that's lovely! What did you name it?",
        "真的吗，太好了！给它起了什么名字？",
    ),
    "pet_name": ("{pet}. My niece picked it.", "叫{pet}，是我外甥女起的。"),
    "pet_q": (
        "What did {who} call the {animal} they adopted?",
        "{who}领养的{animal}取了什么名字？",
    ),
    "pet_other": (
        "Our {animal} {pet} chewed my shoes again, by the way.",
        "对了，我家的{animal}{pet}又把我的鞋咬坏了。",
    ),
    # job (fact, then an update)
    "job_start": (
        "I started working as a {job} at {company} this month.",
        "我这个月开始在{company}当{job}了。",
    ),
    "job_react": (
        "Congratulations! How is the team at {company}?",
        "恭喜！{company}的同事怎么样？",
    ),
    "job_switch": (
        "Small update: I left {company} and I'm now a {job} at {company2}.",
        "跟你说一下，我已经离开{company}了，现在在{company2}做{job}。",
    ),
    "job_q_now": ("What does {who} do for a living these days?", "{who}如今是做什么职业的？"),
    "job_q_before": (
        "Where did {who} work before joining {company2}?",
        "{who}加入{company2}之前在哪里工作？",
    ),
    # home city (fact, then an update)
    "home_first": (
        "We finally found an apartment in {city}, close to the old market.",
        "我们终于在{city}找到房子了，离老市场很近。",
    ),
    "home_move": (
        "We moved to {city2} last week, the boxes are still everywhere.",
        "我们上周搬到{city2}了，到处都是箱子。",
    ),
    "home_q": ("Where is {who}'s home at the moment?", "{who}目前的家在哪里？"),
    # dated events
    "event_today": (
        "I did the {event} today, and I'm so {feeling} about it.",
        "我今天参加了{event}，感觉特别{feeling}。",
    ),
    "event_last": (
        "Last {weekday} I went to a {event} with my cousin.",
        "上{weekday}我和表姐一起去了{event}。",
    ),
    "event_q": ("On what date did {who} attend the {event}?", "{who}哪天参加的{event}？"),
    # reading across months (answer depends on the date in the question)
    "reading": ("These days I'm reading {book} before bed.", "最近我每天睡前在读{book}。"),
    "reading_q": ("What book was {who} reading in {month}?", "{who}在{month}读的是哪本书？"),
    # siblings (multi-hop)
    "sib_city": ("My {rel} {sib} lives in {city} now.", "我{rel}{sib}现在住在{city}。"),
    "sib_job": ("{sib} just got a job as a {job}!", "{sib}刚找到一份{job}的工作！"),
    "sib_q": (
        "What job does {who}'s sibling who lives in {city} have?",
        "{who}住在{city}的那个兄弟姐妹做什么工作？",
    ),
    # sports (aggregation over sessions)
    "sport": (
        "I signed up for {sport} lessons, first class on {weekday}.",
        "我报名了{sport}课，{weekday}第一节课。",
    ),
    "sport_q": ("Which sports has {who} taken lessons in?", "{who}上过哪些运动课？"),
    # favourite restaurant (fact, then an update)
    "fav": ("My favourite place for {food} is {restaurant}.", "我最喜欢去{restaurant}吃{food}。"),
    "fav_new": (
        "I stopped going to {restaurant}; {restaurant2} is my favourite now.",
        "我不去{restaurant}了，现在最喜欢{restaurant2}。",
    ),
    "fav_q": ("Which restaurant does {who} like best at present?", "{who}目前最爱哪家店？"),
    # short answers that need their question
    "count_ask": ("How many people came to your {gathering}?", "你的{gathering}来了多少人？"),
    "count_say": ("About {n}, more than we planned!", "大概{n}个，比我们计划的多！"),
    "count_q": (
        "How many guests showed up at {who}'s {gathering}?",
        "{who}的{gathering}有多少客人到场？",
    ),
    "paint_ask": (
        "What colour did you paint the {room} in the end?",
        "你的{room}最后刷成什么颜色了？",
    ),
    "paint_say": ("{color}. It looks calm.", "{color}，看起来很舒服。"),
    "paint_q": ("What colour did {who} paint the {room}?", "{who}把{room}刷成了什么颜色？"),
}

# Small talk that shares the scripts' vocabulary, so keyword overlap alone does not find the
# answer. Fields: name, animal, city, job, food, sport, event, feeling, weekday, book.
FILLER: tuple[Pair, ...] = (
    (
        "How was your {weekday}? Mine was quiet, mostly errands.",
        "你{weekday}过得怎么样？我主要在办事。",
    ),
    ("I saw a {animal} at the park and thought of you.", "我在公园看到一只{animal}，就想到了你。"),
    ("Have you ever been to {city}? People keep recommending it.", "你去过{city}吗？大家都推荐。"),
    (
        "My colleague wants to become a {job}, she asked me for advice.",
        "我同事想当{job}，来问我的意见。",
    ),
    (
        "I tried making {food} at home, it was a disaster but fun.",
        "我在家试着做{food}，虽然失败了但很好玩。",
    ),
    (
        "Watching {sport} on TV always makes me want to start again.",
        "看电视上的{sport}总让我想重新开始练。",
    ),
    (
        "Someone at work mentioned a {event} next month, not sure I'll go.",
        "公司有人提到下个月有个{event}，我不确定去不去。",
    ),
    ("I'm a bit {feeling} this week, too much going on.", "这周有点{feeling}，事情太多了。"),
    ("Did you finish that series we talked about?", "我们聊过的那部剧你看完了吗？"),
    (
        "The weather has been strange lately, sun and rain in one hour.",
        "最近天气很怪，一个小时里又晴又下雨。",
    ),
    (
        "My friend {name} lent me {book}, I haven't opened it yet.",
        "我朋友{name}借给我{book}，我还没翻开。",
    ),
    ("We should plan a trip to {city} someday.", "我们哪天应该计划去{city}玩一趟。"),
    ("Haha, that's so true.", "哈哈，确实是这样。"),
    ("Totally agree with you.", "完全同意。"),
    ("I need more sleep, honestly.", "说实话，我需要多睡一点。"),
    ("That reminds me, I still owe {name} a coffee.", "这让我想起来，我还欠{name}一杯咖啡。"),
    (
        "Any tips for keeping a {animal} calm during fireworks?",
        "放烟花的时候怎么让{animal}安静下来？",
    ),
    ("A new place serving {food} opened near my office.", "我公司附近新开了一家{food}店。"),
    ("I read that {city} has great museums.", "听说{city}的博物馆很棒。"),
    ("Work was busy, three meetings before lunch.", "工作很忙，午饭前开了三个会。"),
    # Distractors: the planted facts' words, about other people or hypothetical.
    (
        "{name}'s {animal} is called {pet}, she sent me photos.",
        "{name}家的{animal}叫{pet}，她给我发了照片。",
    ),
    (
        "My cousin works as a {job} at {company}, long hours.",
        "我表哥在{company}当{job}，工作时间很长。",
    ),
    ("{name} moved to {city} last year and loves it.", "{name}去年搬到了{city}，很喜欢那里。"),
    ("I might go to the {event} next month, not sure yet.", "下个月我可能去{event}，还没定。"),
    (
        "{name} says {restaurant} has the best {food} in town.",
        "{name}说{restaurant}的{food}是城里最好吃的。",
    ),
    ("Someday we should paint the {room} {color}.", "哪天我们应该把{room}刷成{color}。"),
    (
        "About {n} people came to {name}'s {gathering}, she said.",
        "{name}说她的{gathering}来了大概{n}个人。",
    ),
    ("{name}'s {rel} is a {job} in {city}.", "{name}的{rel}在{city}当{job}。"),
    (
        "I thought about taking {sport} lessons but it's expensive.",
        "我想过去上{sport}课，但是太贵了。",
    ),
    ("{name} is reading {book} too, small world.", "{name}也在读{book}，真巧。"),
)
